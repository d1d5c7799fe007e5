"""Gradient averaging for CPU ranks on one machine, in the training thread, over loopback sockets.

gloo runs every collective through a thread of its own. When each rank has a core to itself (one rank per core,
the usual launch) that thread has to preempt a busy training thread to deliver a few kilobytes, and a small
model's step waits milliseconds for it (``benchmarks/scale.py``: two ranks at 1.6x one instead of 1.9x). Here the
rank that trains also exchanges: rank 0 receives each other rank's bucket in rank order, sums them in that order,
divides by the world size and sends the same average back, so every rank ends with bit-identical gradients.

``distributed.wrap`` registers it as DDP's communication hook when the process group is gloo, the parameters are
on the CPU and every rank reaches rank 0 over loopback (``LoopbackAverage.connect``); buckets larger than
``DIRECT_BYTES`` (where bandwidth, not wake-up latency, decides) still go through gloo's ring all-reduce.
"""

import datetime
import math
import secrets
import socket
from typing import Any

import torch
import torch.distributed as dist

from hybridai.core.errors import HybridAIError, invalid

__all__ = ["DIRECT_BYTES", "LoopbackAverage", "average_hook", "one_machine"]

DIRECT_BYTES = 1 << 20  # buckets up to 1 MiB are averaged over the loopback sockets


def one_machine() -> bool:
    """True when every rank of the default process group runs on this machine (same host name)."""
    names: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(names, socket.gethostname())
    return len(set(names)) == 1


class LoopbackAverage:
    """Connections to the other ranks, and the average of a tensor over all ranks computed through them.
    ``LoopbackAverage.connect()`` makes one (collectively)."""

    def __init__(self, rank: int, world: int, peers: list[socket.socket]) -> None:
        self.rank, self.world, self.peers = rank, world, peers

    @classmethod
    def connect(cls, timeout: datetime.timedelta | float = 1800.0, reach: float = 10.0) -> "LoopbackAverage | None":
        """Called by every rank at the same point: rank 0 listens on 127.0.0.1, the port and a random token are
        broadcast, every other rank connects and shows the token, rank 0 answers with it. None on every rank when
        the ranks have different host names, or any rank could not reach rank 0 so within ``reach`` seconds (one
        host name, separate network namespaces: containers); the process group then does the averaging.
        ``timeout``: seconds a rank waits for another during an exchange."""
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        for name, value in (("timeout", seconds), ("reach", reach)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise invalid(name, value, "a positive number of seconds (timeout: or a datetime.timedelta)")
        rank, world = dist.get_rank(), dist.get_world_size()
        if not one_machine():
            return None
        listener = socket.create_server(("127.0.0.1", 0), backlog=world) if rank == 0 else None
        shared: list[Any] = [listener.getsockname()[1], secrets.token_bytes(16)] if listener is not None else [0, b""]
        dist.broadcast_object_list(shared, src=0)
        port: int = shared[0]
        token: bytes = shared[1]
        peers: dict[int, socket.socket] = {}
        if listener is not None:
            with listener:
                listener.settimeout(reach)
                for _ in range(world - 1):
                    try:
                        peer, _ = listener.accept()
                        peer.settimeout(reach)
                        shown = cls._receive(peer, bytearray(len(token) + 4))
                    except OSError:  # a timeout included: some rank cannot reach this one
                        break
                    if bytes(shown[: len(token)]) != token:
                        peer.close()  # not one of ours
                        continue
                    peer.sendall(token)
                    peers[int.from_bytes(shown[len(token) :], "little")] = peer
        else:
            try:
                peer = socket.create_connection(("127.0.0.1", port), timeout=reach)
                peers[0] = peer
                peer.sendall(token + rank.to_bytes(4, "little"))
                if bytes(cls._receive(peer, bytearray(len(token)))) != token:
                    raise ConnectionError("another process answered on rank 0's port")
            except OSError:
                for peer in peers.values():
                    peer.close()
                peers.clear()
        reached: list[Any] = [None] * world
        dist.all_gather_object(reached, len(peers) == (world - 1 if rank == 0 else 1))
        if not all(reached):
            for peer in peers.values():
                peer.close()
            return None
        ordered = [peers[r] for r in sorted(peers)]
        for peer in ordered:
            peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer.settimeout(seconds)
        return cls(rank, world, ordered)

    def average(self, tensor: torch.Tensor) -> None:
        """Replace ``tensor`` (contiguous, CPU) by its average over the ranks, the same bits on every rank."""
        incoming = torch.empty_like(tensor)  # received apart: a failed exchange leaves ``tensor`` as it was
        try:
            if self.rank != 0:
                (peer,) = self.peers
                peer.sendall(_bytes(tensor))
                self._receive(peer, _bytes(incoming))
                tensor.copy_(incoming)
                return
            total = tensor.clone()
            for peer in self.peers:  # rank order: the same sum whatever the arrival order
                self._receive(peer, _bytes(incoming))
                total += incoming
            total /= self.world
            for peer in self.peers:
                peer.sendall(_bytes(total))
            tensor.copy_(total)
        except (TimeoutError, OSError) as error:
            raise HybridAIError(
                f"rank {self.rank}: the gradient exchange with the other ranks failed ({error}); accepted: every "
                "rank runs the same number of backward passes (same number of batches per epoch)"
            ) from error

    @staticmethod
    def _receive(peer: socket.socket, into: Any) -> Any:
        view = memoryview(into).cast("B")
        received = 0
        while received < len(view):
            count = peer.recv_into(view[received:])
            if count == 0:
                raise ConnectionError("a rank closed its connection")
            received += count
        return into

    def close(self) -> None:
        for peer in self.peers:
            peer.close()
        self.peers = []


def _bytes(tensor: torch.Tensor) -> Any:
    """The memory of a contiguous CPU tensor as a writable NumPy byte array (no copy)."""
    return tensor.view(-1).view(torch.uint8).numpy()


def average_hook(exchange: LoopbackAverage, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook (``register_comm_hook(exchange, average_hook)``): the bucket's mean over the ranks."""
    gradient = bucket.buffer()
    if gradient.device.type != "cpu" or gradient.numel() * gradient.element_size() > DIRECT_BYTES:
        gradient.div_(exchange.world)
        return dist.all_reduce(gradient, async_op=True).get_future().then(lambda done: done.value()[0])
    exchange.average(gradient)
    averaged: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    averaged.set_result(gradient)
    return averaged
