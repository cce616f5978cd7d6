"""What `GET /metrics` reports, in Prometheus' text format (version 0.0.4): requests by endpoint and
status, their latency, the size of each forward pass in requests and tokens, and the queue depth.

    >>> m = Metrics(); m.request("/embed", 200, 0.012); m.batch(3, 41)
    >>> print(m.render(queue_depth=0).splitlines()[2])
    bertology_requests_total{endpoint="/embed",status="200"} 1
"""

from __future__ import annotations

import threading
from bisect import bisect_left

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REQUEST_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]):
        self.buckets, self.counts, self.sum, self.count = buckets, [0] * len(buckets), 0.0, 0

    def observe(self, value: float) -> None:
        i = bisect_left(self.buckets, value)  # the first bucket whose bound is ≥ value
        if i < len(self.counts):
            self.counts[i] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        out, running = [], 0
        sep = "," if labels else ""
        for bound, n in zip(self.buckets, self.counts):
            running += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        braces = f"{{{labels}}}" if labels else ""
        out += [f"{name}_sum{braces} {self.sum:.6g}", f"{name}_count{braces} {self.count}"]
        return out


class Metrics:
    """Updated from the event loop (requests) and the worker thread (batches); one lock for both."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.batch_requests = Histogram(REQUEST_BUCKETS)
        self.batch_tokens = Histogram(TOKEN_BUCKETS)

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[endpoint, status] = self.requests.get((endpoint, status), 0) + 1
            self.latency.setdefault(endpoint, Histogram(LATENCY_BUCKETS)).observe(seconds)

    def batch(self, requests: int, tokens: int) -> None:
        with self._lock:
            self.batch_requests.observe(requests)
            self.batch_tokens.observe(tokens)

    def render(self, queue_depth: int) -> str:
        with self._lock:
            lines = [
                "# HELP bertology_requests_total HTTP requests by endpoint and status code",
                "# TYPE bertology_requests_total counter",
            ]
            lines += [
                f'bertology_requests_total{{endpoint="{e}",status="{s}"}} {n}'
                for (e, s), n in sorted(self.requests.items())
            ]
            lines += [
                "# HELP bertology_request_duration_seconds time from the request's arrival to its answer",
                "# TYPE bertology_request_duration_seconds histogram",
            ]
            for endpoint, h in sorted(self.latency.items()):
                lines += h.lines("bertology_request_duration_seconds", f'endpoint="{endpoint}"')
            lines += [
                "# HELP bertology_batch_requests requests grouped into one forward pass",
                "# TYPE bertology_batch_requests histogram",
                *self.batch_requests.lines("bertology_batch_requests"),
                "# HELP bertology_batch_tokens tokens in one forward pass",
                "# TYPE bertology_batch_tokens histogram",
                *self.batch_tokens.lines("bertology_batch_tokens"),
                "# HELP bertology_queue_depth requests queued or running now",
                "# TYPE bertology_queue_depth gauge",
                f"bertology_queue_depth {queue_depth}",
            ]
        return "\n".join(lines) + "\n"
