"""MPI calls from inside numba kernels: ``MPI_Barrier`` and ``MPI_Bcast`` by address.

The timed loop of the Parallel Benchmark (:mod:`jitterlab.measure.pb`) is one numba kernel,
so that no Python bytecode, object allocation or garbage collection runs between the
timestamp reads. It calls the MPI library directly: :func:`mpi_functions` looks up the
C functions ``MPI_Barrier`` and ``MPI_Bcast`` in the library mpi4py is linked to, and
:func:`handle` turns an mpi4py object into the C handle (an ``int`` in MPICH, a pointer
in Open MPI and in the standard MPI ABI). The intrinsics :func:`call_barrier` and
:func:`call_bcast` cast the address to a function pointer of the right signature and call
it; the address and the handles are ordinary int arguments of the kernel, so the kernel
can be cached on disk (nothing process-specific is compiled in).
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["mpi_functions", "handle", "call_barrier", "call_bcast", "call_send", "call_recv",
           "STATUS_WORDS", "mpi_description"]

#: int64 words of the buffer given to ``MPI_Recv`` as its ``MPI_Status``: larger than
#: the status of MPICH (20 bytes), Open MPI (24) and the standard MPI ABI (32)
STATUS_WORDS = 16


def mpi_functions(MPI, names=("MPI_Barrier", "MPI_Bcast")) -> tuple[np.int64, ...]:
    """Addresses of MPI functions (default ``MPI_Barrier`` and ``MPI_Bcast``) in the MPI
    library of mpi4py.

    ``MPI`` is the ``mpi4py.MPI`` module. The symbols are looked up through the handle of
    mpi4py's extension module (which searches the libraries it depends on), then in the
    global namespace of the process. Raises RuntimeError if they cannot be found (an MPI
    library linked statically into mpi4py, for example).
    """
    libraries = []
    for name in (MPI.__file__, None):
        try:
            libraries.append(ctypes.CDLL(name))
        except OSError:
            continue
    for library in libraries:
        try:
            addresses = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                         for name in names]
        except AttributeError:
            continue
        if all(addresses):
            return tuple(np.int64(address) for address in addresses)
    raise RuntimeError(f"cannot find {' and '.join(names)} in the MPI library used by "
                       f"mpi4py ({MPI.__file__}); the benchmarks call them from a "
                       "compiled loop and need a dynamically linked MPI")


def handle(MPI, obj) -> np.int32 | np.int64:
    """The C handle of an mpi4py object (``Comm``, ``Datatype``) as a numpy integer.

    Its width is the size of the handle type of the MPI library: 4 bytes (MPICH's
    ``int`` handles) or 8 (pointers: Open MPI, the standard MPI ABI).
    """
    size = MPI._sizeof(obj)
    value = MPI._handleof(obj)
    if size == 4:
        return np.int32(ctypes.c_int32(value).value)
    if size == 8:
        return np.int64(ctypes.c_int64(value).value)
    raise RuntimeError(f"unexpected size of an MPI handle: {size} bytes")


def check_handle(kind, value):
    if not isinstance(value, types.Integer) or value.bitwidth not in (32, 64):
        raise TypeError(f"{kind} must be an int32 or int64 MPI handle, got {value}")


@intrinsic
def call_barrier(typingctx, function, comm):
    """``MPI_Barrier(comm)`` through the function address ``function``; numba code only.

    Returns the MPI error code (0 is ``MPI_SUCCESS``).
    """
    if not isinstance(function, types.Integer):
        return None
    check_handle("comm", comm)

    def codegen(context, builder, signature, args):
        address, comm_value = args
        function_type = ir.FunctionType(ir.IntType(32), [ir.IntType(comm.bitwidth)])
        pointer = builder.inttoptr(address, function_type.as_pointer())
        return builder.call(pointer, [comm_value])

    return types.int32(function, comm), codegen


@intrinsic
def call_bcast(typingctx, function, buffer, datatype, comm):
    """``MPI_Bcast(buffer, buffer.size, datatype, 0, comm)``; numba code only.

    ``buffer`` is a contiguous array whose elements are of MPI type ``datatype``; the
    root is rank 0. Returns the MPI error code.
    """
    if not isinstance(function, types.Integer):
        return None
    if not isinstance(buffer, types.Array) or buffer.layout != "C":
        raise TypeError(f"buffer must be a C-contiguous array, got {buffer}")
    check_handle("datatype", datatype)
    check_handle("comm", comm)

    def codegen(context, builder, signature, args):
        address, array_value, datatype_value, comm_value = args
        int32 = ir.IntType(32)
        function_type = ir.FunctionType(
            int32, [ir.IntType(8).as_pointer(), int32, ir.IntType(datatype.bitwidth), int32,
                    ir.IntType(comm.bitwidth)])
        return _point_to_point(context, builder, function_type, address, buffer,
                               array_value, [datatype_value, ir.Constant(int32, 0),
                                             comm_value])

    return types.int32(function, buffer, datatype, comm), codegen


def _point_to_point(context, builder, function_type, address, array_type, array_value,
                    fixed):
    """Call ``function(buffer, count, *fixed)`` with the data and size of an array."""
    byte_pointer = ir.IntType(8).as_pointer()
    pointer = builder.inttoptr(address, function_type.as_pointer())
    array = context.make_array(array_type)(context, builder, array_value)
    data = builder.bitcast(array.data, byte_pointer)
    count = builder.trunc(array.nitems, ir.IntType(32))
    return builder.call(pointer, [data, count, *fixed])


def _check_point_to_point(buffer, datatype, peer, tag, comm):
    if not isinstance(buffer, types.Array) or buffer.layout != "C":
        raise TypeError(f"buffer must be a C-contiguous array, got {buffer}")
    check_handle("datatype", datatype)
    check_handle("comm", comm)
    for kind, value in (("peer", peer), ("tag", tag)):
        if not isinstance(value, types.Integer) or value.bitwidth != 32:
            raise TypeError(f"{kind} must be an int32, got {value}")


@intrinsic
def call_send(typingctx, function, buffer, datatype, dest, tag, comm):
    """``MPI_Send(buffer, buffer.size, datatype, dest, tag, comm)``; numba code only.

    Returns the MPI error code.
    """
    if not isinstance(function, types.Integer):
        return None
    _check_point_to_point(buffer, datatype, dest, tag, comm)

    def codegen(context, builder, signature, args):
        address, array_value, datatype_value, dest_value, tag_value, comm_value = args
        int32 = ir.IntType(32)
        function_type = ir.FunctionType(
            int32, [ir.IntType(8).as_pointer(), int32, ir.IntType(datatype.bitwidth), int32,
                    int32, ir.IntType(comm.bitwidth)])
        return _point_to_point(context, builder, function_type, address, buffer,
                               array_value, [datatype_value, dest_value, tag_value,
                                             comm_value])

    return types.int32(function, buffer, datatype, dest, tag, comm), codegen


@intrinsic
def call_recv(typingctx, function, buffer, datatype, source, tag, comm, status):
    """``MPI_Recv(buffer, buffer.size, datatype, source, tag, comm, status)``; numba code
    only. ``status`` is an int64 array of :data:`STATUS_WORDS` words (room for the
    ``MPI_Status`` of any MPI library). Returns the MPI error code.
    """
    if not isinstance(function, types.Integer):
        return None
    _check_point_to_point(buffer, datatype, source, tag, comm)
    if not isinstance(status, types.Array) or status.layout != "C":
        raise TypeError(f"status must be a C-contiguous array, got {status}")

    def codegen(context, builder, signature, args):
        (address, array_value, datatype_value, source_value, tag_value, comm_value,
         status_value) = args
        int32 = ir.IntType(32)
        byte_pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(
            int32, [byte_pointer, int32, ir.IntType(datatype.bitwidth), int32, int32,
                    ir.IntType(comm.bitwidth), byte_pointer])
        status_array = context.make_array(status)(context, builder, status_value)
        status_pointer = builder.bitcast(status_array.data, byte_pointer)
        return _point_to_point(context, builder, function_type, address, buffer,
                               array_value, [datatype_value, source_value, tag_value,
                                             comm_value, status_pointer])

    return types.int32(function, buffer, datatype, source, tag, comm, status), codegen


def mpi_description(MPI) -> dict:
    """The MPI library and standard version, for the attributes of a measurement."""
    import mpi4py

    vendor, version = MPI.get_vendor()
    library = MPI.Get_library_version().strip().splitlines()
    return {"mpi_vendor": str(vendor),
            "mpi_vendor_version": ".".join(str(part) for part in version),
            "mpi_standard_version": ".".join(str(part) for part in MPI.Get_version()),
            "mpi_library_version": " ".join(library[0].split()) if library else "",
            "mpi4py_version": mpi4py.__version__}


# --------------------------------------------------------------------------------------
# MPI_Allreduce, MPI_Ibarrier, MPI_Iallreduce and MPI_Test from numba (the BSP benchmark)
# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------
# MPI_Allreduce, MPI_Ibarrier, MPI_Iallreduce and MPI_Test from numba
# --------------------------------------------------------------------------------------
def _check_arrays(**arrays):
    for name, array in arrays.items():
        if not isinstance(array, types.Array) or array.layout != "C":
            raise TypeError(f"{name} must be a C-contiguous array, got {array}")


def _data(context, builder, array_type, array_value):
    """The data pointer of an array, as ``i8*``."""
    array = context.make_array(array_type)(context, builder, array_value)
    return builder.bitcast(array.data, ir.IntType(8).as_pointer())


def _reduce_call(context, builder, signature, args, with_request):
    """``MPI_[I]allreduce(send, receive, send.size, datatype, op, comm[, request])``."""
    int32 = ir.IntType(32)
    byte_pointer = ir.IntType(8).as_pointer()
    address, send, receive, datatype, op, comm = args[:6]
    types_ = signature.args
    arguments = [byte_pointer, byte_pointer, int32, ir.IntType(types_[3].bitwidth),
                 ir.IntType(types_[4].bitwidth), ir.IntType(types_[5].bitwidth)]
    count = builder.trunc(context.make_array(types_[1])(context, builder, send).nitems, int32)
    values = [_data(context, builder, types_[1], send),
              _data(context, builder, types_[2], receive), count, datatype, op, comm]
    if with_request:
        arguments.append(byte_pointer)
        values.append(_data(context, builder, types_[6], args[6]))
    function_type = ir.FunctionType(int32, arguments)
    return builder.call(builder.inttoptr(address, function_type.as_pointer()), values)


@intrinsic
def call_allreduce(typingctx, function, send, receive, datatype, op, comm):
    """``MPI_Allreduce(send, receive, send.size, datatype, op, comm)``; numba code only.

    ``send`` and ``receive`` are distinct contiguous arrays of the same size (no
    ``MPI_IN_PLACE``, whose value differs between MPI libraries). Returns the MPI error
    code.
    """
    if not isinstance(function, types.Integer):
        return None
    _check_arrays(send=send, receive=receive)
    for name, value in (("datatype", datatype), ("op", op), ("comm", comm)):
        check_handle(name, value)

    def codegen(context, builder, signature, args):
        return _reduce_call(context, builder, signature, args, False)

    return types.int32(function, send, receive, datatype, op, comm), codegen


@intrinsic
def call_iallreduce(typingctx, function, send, receive, datatype, op, comm, request):
    """``MPI_Iallreduce(send, receive, send.size, datatype, op, comm, request)``; numba
    code only. ``request`` is an int64 array of one element: room for the request handle
    of any MPI library (an int in MPICH, a pointer in Open MPI). Returns the error code.
    """
    if not isinstance(function, types.Integer):
        return None
    _check_arrays(send=send, receive=receive, request=request)
    for name, value in (("datatype", datatype), ("op", op), ("comm", comm)):
        check_handle(name, value)

    def codegen(context, builder, signature, args):
        return _reduce_call(context, builder, signature, args, True)

    return types.int32(function, send, receive, datatype, op, comm, request), codegen


@intrinsic
def call_ibarrier(typingctx, function, comm, request):
    """``MPI_Ibarrier(comm, request)``; numba code only (``request`` as for
    :func:`call_iallreduce`). Returns the MPI error code."""
    if not isinstance(function, types.Integer):
        return None
    check_handle("comm", comm)
    _check_arrays(request=request)

    def codegen(context, builder, signature, args):
        address, comm_value, request_value = args
        function_type = ir.FunctionType(ir.IntType(32), [ir.IntType(comm.bitwidth),
                                                         ir.IntType(8).as_pointer()])
        return builder.call(builder.inttoptr(address, function_type.as_pointer()),
                            [comm_value, _data(context, builder, request, request_value)])

    return types.int32(function, comm, request), codegen


@intrinsic
def call_test(typingctx, function, request, flag, status):
    """``MPI_Test(request, flag, status)``; numba code only. ``flag`` is an int32 array of
    one element (set to 1 once the operation has completed), ``status`` an int64 array of
    :data:`jitterlab.measure._mpi.STATUS_WORDS` words. Returns the MPI error code."""
    if not isinstance(function, types.Integer):
        return None
    _check_arrays(request=request, flag=flag, status=status)

    def codegen(context, builder, signature, args):
        address, request_value, flag_value, status_value = args
        byte_pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.IntType(32), [byte_pointer] * 3)
        return builder.call(builder.inttoptr(address, function_type.as_pointer()),
                            [_data(context, builder, request, request_value),
                             _data(context, builder, flag, flag_value),
                             _data(context, builder, status, status_value)])

    return types.int32(function, request, flag, status), codegen


# --------------------------------------------------------------------------------------
# what every MPI benchmark does around its run
# --------------------------------------------------------------------------------------
def call_text(function: str, requested: dict, output) -> str:
    """The call that started a benchmark, as recorded in its files' provenance."""
    arguments = ", ".join(f"{key}={value!r}" for key, value in requested.items())
    return f"{function}({arguments}, output={str(output)!r})"


def on_own_communicator(comm, benchmark: str, run):
    """``run(comm, MPI)`` on a duplicate of ``comm`` (``COMM_WORLD`` when None), freed after.

    mpi4py is imported here; without it the ImportError names ``benchmark`` and the
    ``mpi`` extra that brings it.
    """
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError(f"the {benchmark} needs mpi4py and an MPI library: pip install "
                          "'jitterlab[mpi]'") from exc
    own = (MPI.COMM_WORLD if comm is None else comm).Dup()
    try:
        return run(own, MPI)
    finally:
        own.Free()
