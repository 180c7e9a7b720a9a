"""A long-lived Python SDK client, as an agent holds one: it calls one
function back to back over ONE connection for a while and reports, as one
JSON line, how many calls were answered, how many got no answer within the
budget, and the latency percentiles. Driven by tests/soak_e2e.rs.

    python3 soak.py URL FUNCTION_ID PAYLOAD_JSON SECONDS BUDGET_MS
"""

import json
import os
import sys
import time

from iii import InitOptions, register_worker


def main() -> None:
    url, function_id, payload, seconds, budget_ms = sys.argv[1:6]
    payload = json.loads(payload)
    seconds, budget_ms = float(seconds), int(budget_ms)
    # a test client is not the product: it exports nothing
    worker = register_worker(
        url,
        InitOptions(worker_name=f"soak-python-{os.getpid()}", otel={"enabled": False}),
    )
    answered, lost, errors, latencies = 0, [], [], []
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            started = time.monotonic()
            try:
                worker.trigger(
                    {"function_id": function_id, "payload": payload, "timeout_ms": budget_ms}
                )
                answered += 1
                latencies.append(time.monotonic() - started)
            except Exception as e:  # the SDK raises InvocationError(code=...)
                code = str(getattr(e, "code", "")).upper()
                if code == "TIMEOUT":
                    lost.append(round(time.monotonic() - started, 3))
                elif code == "":
                    # not connected yet: the first call may race the handshake
                    errors.append(repr(e))
                    time.sleep(0.05)
                else:
                    errors.append(f"{code}: {e}")
    finally:
        worker.shutdown()
    latencies.sort()

    def pct(p: float) -> float:
        if not latencies:
            return 0.0
        return latencies[round((len(latencies) - 1) * p)] * 1e3

    print(
        json.dumps(
            {
                "sdk": "python",
                "answered": answered,
                "unanswered": len(lost),
                "unanswered_after_s": lost,
                "errors": errors[:10],
                "p50_ms": pct(0.5),
                "p99_ms": pct(0.99),
                "max_ms": pct(1.0),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
