"""`ctxpar serve` under `mpirun -np 4 ... --distributed-executor-backend mpi`: rank 0 serves HTTP,
the other ranks run the worker loop; greedy tokens equal `ctxpar generate` (in-process ranks);
prompt logprobs score generated tokens as they were sampled; SIGTERM to rank 0 stops every rank
and mpirun exits 0."""

import concurrent.futures
import os
import unittest


import server_fixture as fx


def rank0_pid(port):
    """The pid of the `ctxpar serve --port <port>` process that is MPI rank 0."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if (cmdline and cmdline[0].endswith(b"ctxpar") and str(port).encode() in cmdline
                and b"OMPI_COMM_WORLD_RANK=0" in environ):
            return int(pid)
    raise AssertionError(f"no rank 0 serving port {port}")


class UnderMpirun(unittest.TestCase):
    def test_greedy_tokens_streams_and_sigterm(self):
        rng = fx.seeded_rng(self)
        prompts = fx.random_prompts(rng, 5)
        max_tokens = rng.randint(2, 12)
        want = fx.generate(prompts, max_tokens)
        with fx.Server(mpi_ranks=4) as server:
            client = fx.openai_client(server)

            def one(prompt):
                return client.completions.create(
                    model=fx.MODEL, prompt=prompt, max_tokens=max_tokens, temperature=0,
                    extra_body={"ignore_eos": True, "return_token_ids": True}).model_dump()

            with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                got = list(pool.map(one, prompts))
            for i, r in enumerate(got):
                self.assertEqual(r["choices"][0]["token_ids"], want[i], f"prompt {i}")
            text = "".join(c.choices[0].text for c in client.completions.create(
                model=fx.MODEL, prompt=prompts[0], max_tokens=max_tokens, temperature=0,
                stream=True, extra_body={"ignore_eos": True}) if c.choices)
            whole = client.completions.create(model=fx.MODEL, prompt=prompts[0],
                                              max_tokens=max_tokens, temperature=0,
                                              extra_body={"ignore_eos": True})
            self.assertEqual(text, whole.choices[0].text)
            # Prompt logprobs come from every rank's logits of the prefill: the generated
            # tokens, fed back with echo, score as they were sampled.
            first = client.completions.create(
                model=fx.MODEL, prompt=prompts[1], max_tokens=3, temperature=0, logprobs=1,
                extra_body={"ignore_eos": True, "return_token_ids": True}).choices[0]
            full = prompts[1] + first.token_ids
            echoed = client.completions.create(model=fx.MODEL, prompt=full, max_tokens=0,
                                               echo=True, logprobs=1).choices[0].logprobs
            self.assertEqual(len(echoed.token_logprobs), len(full))
            self.assertIsNone(echoed.token_logprobs[0])
            for k, want in enumerate(first.logprobs.token_logprobs):
                self.assertAlmostEqual(echoed.token_logprobs[len(prompts[1]) + k], want, places=4)
            server.wait_idle()
            # mpirun answers its own SIGTERM with status 1 whatever the ranks do, so the
            # signal goes to rank 0, which stops the others.
            os.kill(rank0_pid(server.port), 15)
            rc = server.process.wait(timeout=60)
            self.assertEqual(rc, 0, server.output())
            self.assertIn("SIGTERM received", server.output())


if __name__ == "__main__":
    unittest.main()
