"""The one cost model of a point-to-point message, shared by collectives and applications.

A message costs its sender ``send`` and its receiver ``recv`` of CPU time, consumed on
each rank's own noise (a trace or a law), and spends ``latency`` (plus ``per_byte`` per
byte) on the wire, which noise does not touch: the LogGP split of Culler et al. into
overheads o and latency L (and gap per byte G), as LogGOPSim replays it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.checks import check_integer, check_positive

__all__ = ["Message"]


@dataclass(frozen=True)
class Message:
    """Cost of one point-to-point message (LogGP-style).

    Parameters
    ----------
    send, recv : float
        CPU time of sending and of receiving one message, consumed on the rank's own
        noise (LogGP's overhead o). [s]
    latency : float
        Wire latency between nodes, not subject to noise (LogGP's L). [s]
    intra_node_latency : float, optional
        Wire latency inside a node; default ``latency``. [s]
    per_byte : float
        Wire time per byte (LogGP's G), not subject to noise. [s/B]
    size : int
        Message size. [B]
    eager_limit : int, optional
        Largest message sent eagerly; a larger one uses the rendezvous protocol, whose
        request and reply add a round trip (2 × latency) to the wire time. None: every
        message is eager. [B]

    Notes
    -----
    A message whose send starts at t (on the sender's clock, after noise) arrives at
    ``t + send' + wire_time()``, where ``send'`` is the send's CPU time stretched by the
    noise it meets; the receive then takes ``recv`` (also stretched) once the message is
    there and the receiver has reached it in program order. The rendezvous handshake is
    modelled as extra wire time only: the sender is not held until the receiver posts
    its receive.

    Examples
    --------
    >>> import jitterlab as jl
    >>> m = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
    >>> round(m.one_way * 1e6, 6)  # send + latency + recv [µs]
    7.0
    """

    send: float = 0.0
    recv: float = 0.0
    latency: float = 0.0
    intra_node_latency: float | None = None
    per_byte: float = 0.0
    size: int = 0
    eager_limit: int | None = None

    def __post_init__(self):
        for name in ("send", "recv", "latency", "per_byte"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name),
                                                          allow_zero=True))
        if self.intra_node_latency is not None:
            object.__setattr__(self, "intra_node_latency", check_positive(
                "intra_node_latency", self.intra_node_latency, allow_zero=True))
        object.__setattr__(self, "size", check_integer("size", self.size, 0))
        if self.eager_limit is not None:
            object.__setattr__(self, "eager_limit",
                               check_integer("eager_limit", self.eager_limit, 0))

    def wire_time(self, size: int | None = None, intra_node: bool = False) -> float:
        """Time on the wire of one message of ``size`` bytes (default :attr:`size`). [s]"""
        size = self.size if size is None else check_integer("size", size, 0)
        latency = self.latency
        if intra_node and self.intra_node_latency is not None:
            latency = self.intra_node_latency
        handshake = 2.0 * latency if self.eager_limit is not None and size > self.eager_limit \
            else 0.0
        return latency + handshake + self.per_byte * size

    @property
    def one_way(self) -> float:
        """Noiseless time from the start of a send to the end of its receive. [s]"""
        return self.send + self.wire_time() + self.recv

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in vars(self).items()
                          if v is not None and v != 0)
        return f"Message({inner})"
