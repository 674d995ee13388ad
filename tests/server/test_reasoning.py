"""`ctxpar serve --reasoning-parser` through the openai client: deepseek_v3 splits only with
chat_template_kwargs thinking, the split output is the unsplit one, a stream's reasoning deltas
add up to the whole message's, and an unknown parser stops the server with the valid names.
(The tiny model writes no </think>, so its whole output is reasoning; the split itself is
tested in reasoning_parser_test.cc.)"""

import subprocess
import unittest


import server_fixture as fx


class Reasoning(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--reasoning-parser", "deepseek_v3"]).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, question, thinking):
        return dict(model=fx.MODEL, messages=[{"role": "user", "content": question}],
                    max_completion_tokens=20, temperature=0,
                    extra_body={"ignore_eos": True, "chat_template_kwargs": {"thinking": thinking}})

    def question(self):
        return "Why shard the KV cache? " + str(fx.seeded_rng(self).random())

    def test_thinking_switch_moves_the_output_into_reasoning(self):
        question = self.question()
        plain = self.client.chat.completions.create(**self.chat(question, False)).model_dump()
        thought = self.client.chat.completions.create(**self.chat(question, True)).model_dump()
        plain_msg, thought_msg = plain["choices"][0]["message"], thought["choices"][0]["message"]
        self.assertTrue(plain_msg["content"])
        self.assertIsNone(plain_msg["reasoning"])
        self.assertEqual(thought_msg["reasoning"], plain_msg["content"])
        self.assertIsNone(thought_msg["content"])

    def test_stream_reasoning_equals_the_whole_message(self):
        args = self.chat(self.question(), True)
        whole = self.client.chat.completions.create(**args).model_dump()["choices"][0]["message"]
        chunks = [c.model_dump() for c in self.client.chat.completions.create(stream=True, **args)]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        reasoning = "".join(d.get("reasoning") or "" for d in deltas)
        content = "".join(d.get("content") or "" for d in deltas)
        self.assertEqual(reasoning, whole["reasoning"])
        self.assertEqual(content, "")
        self.assertGreater(sum(1 for d in deltas if d.get("reasoning")), 1)


class BadReasoningParser(unittest.TestCase):
    def test_unknown_parser_exits_with_the_valid_names(self):
        args = [fx.CTXPAR, "serve", fx.MODEL, "--reasoning-parser", "granite", "--port", "0"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("'granite' is not supported; use deepseek_r1, qwen3 or deepseek_v3",
                      done.stderr)


if __name__ == "__main__":
    unittest.main()
