"""/metrics counts what completed requests did, under vLLM's names and labels, with ctxpar's DCP
gauges; a client that disconnects mid-stream aborts its request and frees its KV blocks."""

import http.client
import json
import time
import unittest

import server_fixture as fx

# A longer context than the other tests, so a stream runs long enough to be cut off.
ENGINE_ARGS = [a if a != "512" else "4096" for a in fx.ENGINE_ARGS]


class MetricsAndDisconnect(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(engine_args=ENGINE_ARGS).__enter__()

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def counters(self):
        m = self.server.metric
        return {
            "prompt": m("vllm:prompt_tokens_total"),
            "generation": m("vllm:generation_tokens_total"),
            "length": m("vllm:request_success_total", finished_reason="length"),
            "abort": m("vllm:request_success_total", finished_reason="abort"),
            "ttft": m("vllm:time_to_first_token_seconds_count"),
            "itl": m("vllm:inter_token_latency_seconds_count"),
            "e2e": m("vllm:e2e_request_latency_seconds_count"),
        }

    def test_counters_move_as_requests_complete(self):
        rng = fx.seeded_rng(self)
        self.server.wait_idle()
        before = self.counters()
        jobs = [(fx.random_prompts(rng, 1, 1, 50)[0], rng.randint(1, 10)) for _ in range(5)]
        for i, (prompt, max_tokens) in enumerate(jobs):
            body = {"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
                    "temperature": 0, "stream": i % 2 == 1}
            status, _, _ = self.server.request("POST", "/v1/completions", body)
            self.assertEqual(status, 200)
        self.server.wait_idle()
        after = self.counters()
        delta = {k: after[k] - before[k] for k in after}
        self.assertEqual(delta["prompt"], sum(len(p) for p, _ in jobs))
        self.assertEqual(delta["generation"], sum(n for _, n in jobs))
        self.assertEqual(delta["length"], len(jobs))
        self.assertEqual(delta["abort"], 0)
        self.assertEqual(delta["ttft"], len(jobs))
        self.assertEqual(delta["e2e"], len(jobs))
        # One inter-token latency per output after a request's first (one token per step).
        self.assertEqual(delta["itl"], sum(n - 1 for _, n in jobs))

    def test_histograms_gauges_and_dcp_capacity(self):
        samples = self.server.metrics()
        labels = f'model_name="{fx.MODEL}",engine="0"'
        for name in ("vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                     "vllm:e2e_request_latency_seconds"):
            buckets = sorted((float(k.split('le="')[1].split('"')[0]), v)
                             for k, v in samples.items()
                             if k.startswith(name + "_bucket{") and "+Inf" not in k)
            self.assertGreater(len(buckets), 10, name)
            counts = [v for _, v in buckets]
            self.assertEqual(counts, sorted(counts), f"{name} buckets are not cumulative")
            self.assertEqual(samples[f'{name}_bucket{{{labels},le="+Inf"}}'],
                             samples[f"{name}_count{{{labels}}}"])
        self.assertIn(0.001, [float(k.split('le="')[1].split('"')[0]) for k in samples
                              if k.startswith("vllm:time_to_first_token_seconds_bucket")
                              and "+Inf" not in k])
        for gauge in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                      "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"):
            self.assertIn(f"{gauge}{{{labels}}}", samples)
        m = self.server.metric
        with_dcp = m("ctxpar:kv_cache_token_capacity")
        without = m("ctxpar:kv_cache_token_capacity_without_dcp")
        self.assertGreater(without, 0)
        self.assertEqual(with_dcp, 2 * without)  # N = 2: the same memory holds twice the tokens
        self.assertGreater(m("ctxpar:kv_cache_bytes_per_rank"), 0)
        self.assertEqual(m("ctxpar:decode_context_parallel_size"), 2)

    def test_a_disconnect_mid_stream_frees_the_request(self):
        self.server.wait_idle()
        aborts_before = self.server.metric("vllm:request_success_total", finished_reason="abort")
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        body = {"prompt": [7] * 20, "max_tokens": 4000, "ignore_eos": True, "temperature": 0,
                "stream": True}
        conn.request("POST", "/v1/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        self.assertEqual(response.status, 200)
        events = 0
        while events < 3:
            line = response.fp.readline()
            events += line.startswith(b"data: ")
        # It is running and holds blocks now.
        self.assertEqual(self.server.metric("vllm:num_requests_running"), 1)
        self.assertGreater(self.server.metric("vllm:kv_cache_usage_perc"), 0)
        response.close()
        conn.close()
        self.server.wait_idle(timeout=30)
        self.assertEqual(
            self.server.metric("vllm:request_success_total", finished_reason="abort"),
            aborts_before + 1)


    def test_prefix_cache_counters_count_tokens_and_hits_keep_the_tokens(self):
        # Block size 4 x N = 2: virtual blocks of 8 tokens, the unit the cache keeps.
        rng = fx.seeded_rng(self)
        self.server.wait_idle()
        m = self.server.metric
        queries0 = m("vllm:prefix_cache_queries_total")
        hits0 = m("vllm:prefix_cache_hits_total")
        first = [rng.randrange(1, 250) for _ in range(8 * rng.randint(2, 6) + rng.randint(0, 7))]
        second = first + [rng.randrange(1, 250) for _ in range(rng.randint(1, 9))]
        outputs = []
        for prompt in (first, second):
            body = {"prompt": prompt, "max_tokens": 5, "ignore_eos": True, "temperature": 0,
                    "return_token_ids": True}
            status, response, _ = self.server.request("POST", "/v1/completions", body)
            self.assertEqual(status, 200, response)
            outputs.append(response["choices"][0]["token_ids"])
        self.server.wait_idle()
        self.assertEqual(m("vllm:prefix_cache_queries_total") - queries0,
                         len(first) + len(second))
        # The first request's KV covers its prompt and its first 4 outputs (the last has none);
        # the second hits each whole virtual block of that it shares, leaving it at least one
        # token to compute.
        shared = len(first)
        for a, b in zip(second[len(first):], outputs[0][:4]):
            if a != b:
                break
            shared += 1
        expected_hits = min(shared, len(second) - 1) // 8 * 8
        self.assertEqual(m("vllm:prefix_cache_hits_total") - hits0, expected_hits)
        self.assertEqual(outputs, fx.generate([first, second], 5, engine_args=ENGINE_ARGS))

if __name__ == "__main__":
    unittest.main()
