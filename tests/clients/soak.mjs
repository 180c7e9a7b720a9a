// A long-lived Node SDK client, as the console holds one: it calls one
// function back to back over ONE connection for a while and reports, as one
// JSON line, how many calls were answered, how many got no answer within the
// budget, and the latency percentiles. Driven by tests/soak_e2e.rs.
//
//     node soak.mjs URL FUNCTION_ID PAYLOAD_JSON SECONDS BUDGET_MS
import { registerWorker } from "iii-sdk";

const [url, functionId, payloadJson, seconds, budgetMs] = process.argv.slice(2);
const payload = JSON.parse(payloadJson);
const budget = Number(budgetMs);
// a test client is not the product: it exports nothing
const iii = registerWorker(url, {
  workerName: `soak-node-${process.pid}`,
  invocationTimeoutMs: budget,
  otel: { enabled: false },
});
let answered = 0;
const lost = [];
const errors = [];
const latencies = [];
const end = performance.now() + Number(seconds) * 1000;
while (performance.now() < end) {
  const started = performance.now();
  try {
    await iii.trigger({ function_id: functionId, payload, timeout_ms: budget });
    answered += 1;
    latencies.push(performance.now() - started);
  } catch (e) {
    const code = String(e?.code ?? "").toUpperCase();
    if (code === "TIMEOUT" || /timed? ?out/i.test(String(e?.message ?? e))) {
      lost.push(Math.round(performance.now() - started));
    } else {
      errors.push(`${code}: ${e?.message ?? e}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? latencies[Math.round((latencies.length - 1) * p)] : 0);
console.log(
  JSON.stringify({
    sdk: "node",
    answered,
    unanswered: lost.length,
    unanswered_after_ms: lost,
    errors: errors.slice(0, 10),
    p50_ms: pct(0.5),
    p99_ms: pct(0.99),
    max_ms: pct(1),
  }),
);
await iii.shutdown?.();
process.exit(0);
