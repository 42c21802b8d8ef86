"""The LogGOPS cost parameters, as LogGOPSim uses them, and their relation to jl.Message.

LogGOPS (Hoefler, Schneider & Lumsdaine, HPDC 2010) extends LogGP (Alexandrov et al.
1995) with a CPU overhead per byte O and a rendezvous threshold S. In LogGOPSim a
message of s bytes sent at t (once the sender's CPU and NIC are free) costs

* the sender: o + (s−1)·O of CPU time, g + (s−1)·G of its NIC's send side;
* the wire: it reaches the receiver at t + o + L;
* the receiver: o + max((s−1)·O, (s−1)·G) of CPU and g + (s−1)·G of its NIC's receive
  side, from when both are free after the arrival;
* a send of s <= S bytes is done when sent (eager); a larger one when the receive is
  matched (rendezvous).

A :class:`~jitterlab.Message` is the same cost model at one point, without g (no NIC
gap) and without O: ``Message(send=o, recv=o, latency=L, per_byte=G, size=s,
eager_limit=S)``. The two differ in one place, which :meth:`LogGOPS.one_way` and
``Message.one_way`` show: LogGOPSim charges (s−1)·G per message, Message s·G.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.checks import check_integer, check_positive
from ..message import Message

__all__ = ["LogGOPS"]

#: LogGOPSim reads S as a C int: the largest threshold its command line takes [B]
LOGGOPSIM_LARGEST_S = 2**31 - 1


@dataclass(frozen=True)
class LogGOPS:
    """LogGOPS parameters of a network, in seconds, as LogGOPSim uses them.

    Parameters
    ----------
    L : float
        Latency: wire time of a message's first byte. [s]
    o : float
        Overhead: CPU time of sending, and of receiving, one message. [s]
    g : float
        Gap: time a NIC needs between two messages (send side and receive side
        separately). [s]
    G : float
        Gap per byte, after the first, on the NIC; LogGOPSim charges it to the
        receiver's CPU too (a message is received when its last byte is in). [s/B]
    O : float
        Overhead per byte, after the first, on the CPU. [s/B]
    S : int or None
        Rendezvous threshold: a message of more than S bytes is done at the sender
        only when its receive is matched. None: every message is eager. [B]

    Examples
    --------
    >>> import jitterlab as jl
    >>> p = jl.LogGOPS.from_loggopsim()  # LogGOPSim's defaults [ns]
    >>> p.L, p.o, p.g, p.G, p.S
    (2.5e-06, 1.5e-06, 1e-06, 6e-09, 65535)
    >>> round(p.one_way(8) * 1e9)  # 2o + L + 7 G [ns]
    5542
    """

    L: float
    o: float
    g: float
    G: float
    O: float = 0.0  # noqa: E741 (LogGOPS's name)
    S: int | None = None

    def __post_init__(self):
        for name in ("L", "o", "g", "G", "O"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name),
                                                          allow_zero=True))
        if self.S is not None:
            object.__setattr__(self, "S", check_integer("S", self.S, 0))

    @classmethod
    def from_loggopsim(cls, L=2500, o=1500, g=1000, G=6, O=0, S=65535) -> LogGOPS:  # noqa: E741
        """Parameters as LogGOPSim's command line takes them: integer nanoseconds (G, O
        per byte) and S in bytes; the defaults are LogGOPSim's."""
        values = {}
        for name, value in (("L", L), ("o", o), ("g", g), ("G", G), ("O", O)):
            values[name] = check_integer(name, value, 0) * 1e-9
        return cls(**values, S=None if S is None else check_integer("S", S, 0))

    def loggopsim_arguments(self) -> list[str]:
        """The LogGOPSim command-line options of these parameters (whole nanoseconds;
        S=None becomes LogGOPSim's largest threshold, 2**31 − 1 bytes)."""
        args = []
        for name in ("L", "o", "g", "G", "O"):
            ns = getattr(self, name) * 1e9
            if not math.isclose(ns, round(ns), rel_tol=0, abs_tol=1e-6):
                raise ValueError(f"{name} = {getattr(self, name)!r} s is not a whole number "
                                 f"of nanoseconds, which LogGOPSim needs")
            args += [f"-{name}", str(round(ns))]
        threshold = LOGGOPSIM_LARGEST_S if self.S is None else self.S
        if threshold > LOGGOPSIM_LARGEST_S:
            raise ValueError(f"S = {threshold} B exceeds what LogGOPSim reads "
                             f"({LOGGOPSIM_LARGEST_S})")
        return args + ["-S", str(threshold)]

    def eager(self, size: int) -> bool:
        """Whether a message of ``size`` bytes is sent eagerly."""
        return self.S is None or size <= self.S

    def one_way(self, size: int = 1) -> float:
        """Noiseless time from the start of a send of ``size`` bytes to the end of its
        receive, when neither side is busy: 2o + L + max((s−1)·O, (s−1)·G). [s]"""
        size = check_integer("size", size, 1)
        return 2 * self.o + self.L + (size - 1) * max(self.O, self.G)

    def to_message(self, size: int = 0) -> Message:
        """This point of the model as a :class:`~jitterlab.Message` of ``size`` bytes
        (g is dropped; raises ValueError when O is not 0, which Message cannot hold)."""
        if self.O != 0.0:
            raise ValueError(f"O = {self.O!r} s/B: a Message has no CPU overhead per byte")
        return Message(send=self.o, recv=self.o, latency=self.L, per_byte=self.G,
                       size=size, eager_limit=self.S)

    @classmethod
    def from_message(cls, message: Message, g: float = 0.0) -> LogGOPS:
        """LogGOPS parameters of ``message`` (its send and recv must be equal, LogGOPS's
        one o; its intra-node latency is not part of LogGOPS), with gap ``g`` [s]."""
        if not isinstance(message, Message):
            raise TypeError(f"expected a jl.Message, got {type(message).__name__}")
        if message.send != message.recv:
            raise ValueError(f"LogGOPS has one overhead o for sending and receiving; the "
                             f"message has send={message.send!r} and recv={message.recv!r}")
        if message.intra_node_latency is not None and \
                message.intra_node_latency != message.latency:
            raise ValueError("LogGOPS has one latency; the message has an intra-node "
                             "latency of its own")
        return cls(L=message.latency, o=message.send, g=g, G=message.per_byte, O=0.0,
                   S=message.eager_limit)
