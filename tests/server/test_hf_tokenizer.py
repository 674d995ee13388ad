"""`ctxpar serve` on a Hugging Face model directory (dummy weights) with real tokenizer files:
text prompts give the tokenizer's ids (the fixture goldens of Python `tokenizers`), chat
requests render the tokenizer's chat template, output text is the detokenized ids (streamed
or whole), and stop strings cut text that the tokenizer's decoder produced."""

import json
import os
import shutil
import tempfile
import unittest


import server_fixture as fx

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
TOKENIZER = os.path.join(FIXTURES, "tokenizers", "llama3")


class HfTokenizer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(TOKENIZER, "golden.json")) as f:
            cls.golden = json.load(f)
        # A Llama model directory: the fixture model's config.json sized to the tokenizer's
        # vocabulary, and the llama3 fixture's tokenizer files.
        cls.dir = tempfile.mkdtemp(prefix="ctxpar-serve-hf-")
        for name in os.listdir(TOKENIZER):
            shutil.copy(os.path.join(TOKENIZER, name), cls.dir)
        with open(os.path.join(FIXTURES, "tiny-llama-fixture", "config.json")) as f:
            config = json.load(f)
        config["vocab_size"] = cls.golden["vocab_size"]
        with open(os.path.join(cls.dir, "config.json"), "w") as f:
            json.dump(config, f)
        args = ["-tp", "4", "-dcp", "2", "--block-size", "4", "--max-model-len", "256",
                "--kv-cache-memory", "8MiB", "--dtype", "float32", "--threads-per-rank", "1",
                "--load-format", "dummy"]
        cls.server = fx.Server(["--served-model-name", "tiny"], model=cls.dir,
                               engine_args=args).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        try:
            fx.stop(cls.server)
        finally:
            shutil.rmtree(cls.dir)

    def test_text_prompts_are_the_tokenizers_ids(self):
        cases = [c for c in self.golden["encode"] if c.get("text")][:12]
        got = self.client.completions.create(
            model="tiny", prompt=[c["text"] for c in cases], max_tokens=1, temperature=0,
            extra_body={"return_token_ids": True}).model_dump()
        for case, choice in zip(cases, got["choices"]):
            self.assertEqual(choice["prompt_token_ids"], case["ids"], case["text"])
        status, tok, _ = self.server.request("POST", "/tokenize", {"prompt": cases[0]["text"]})
        self.assertEqual((status, tok["tokens"]), (200, cases[0]["ids"]))

    def test_chat_renders_the_tokenizers_template(self):
        messages = [{"role": "system", "content": "  Be brief. "},
                    {"role": "user", "content": "What is DCP?"}]
        # The llama3 fixture's template, written out.
        text = "<|begin_of_text|>" + "".join(
            f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>"
            for m in messages) + "<|start_header_id|>assistant<|end_header_id|>\n\n"
        status, want, _ = self.server.request(
            "POST", "/tokenize", {"prompt": text, "add_special_tokens": False})
        self.assertEqual(status, 200)
        got = self.client.chat.completions.create(
            model="tiny", messages=messages, max_completion_tokens=4, temperature=0,
            extra_body={"return_token_ids": True, "ignore_eos": True}).model_dump()
        self.assertEqual(got["usage"]["prompt_tokens"], len(want["tokens"]))
        status, chat_tok, _ = self.server.request("POST", "/tokenize", {"messages": messages})
        self.assertEqual((status, chat_tok["tokens"]), (200, want["tokens"]))

    def test_output_text_is_the_detokenized_ids_streamed_or_whole(self):
        rng = fx.seeded_rng(self)
        vocab = self.golden["vocab_size"]
        for _ in range(4):
            prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 30))]
            args = dict(model="tiny", prompt=prompt, max_tokens=24, temperature=0,
                        extra_body={"ignore_eos": True, "return_token_ids": True})
            whole = self.client.completions.create(**args).model_dump()["choices"][0]
            streamed = "".join(c.choices[0].text for c in self.client.completions.create(
                stream=True, **args) if c.choices)
            self.assertEqual(streamed, whole["text"])
            # The detokenizer starts in the prompt's context, as vLLM's: the output text is the
            # decode of prompt + output minus the decode of the prompt.
            status, a, _ = self.server.request("POST", "/detokenize",
                                               {"tokens": prompt + whole["token_ids"]})
            status, b, _ = self.server.request("POST", "/detokenize", {"tokens": prompt})
            if a["prompt"].startswith(b["prompt"]) and "\ufffd" not in a["prompt"]:
                self.assertEqual(whole["text"], a["prompt"][len(b["prompt"]):])

    def test_stop_strings_on_decoded_text(self):
        rng = fx.seeded_rng(self)
        vocab = self.golden["vocab_size"]
        # The stop string is cut from the text before its first U+FFFD (a byte token that does
        # not complete a character): dummy weights produce one in most 40-token texts, and
        # asking for none failed about 1 run in 10 after 30 prompts.
        for _ in range(100):
            prompt = [rng.randrange(vocab) for _ in range(8)]
            base = self.complete(prompt).split("\ufffd")[0]
            if len(base) >= 8:
                break
        else:
            self.fail("no greedy text long enough to cut in 100 prompts")
        at = rng.randint(1, len(base) - 4)
        stop = base[at:at + 3]
        got = self.client.completions.create(
            model="tiny", prompt=prompt, max_tokens=40, temperature=0, stop=stop,
            extra_body={"ignore_eos": True}).model_dump()["choices"][0]
        self.assertEqual(got["text"], base[:base.index(stop)])
        self.assertEqual((got["finish_reason"], got["stop_reason"]), ("stop", stop))

    def complete(self, prompt):
        return self.client.completions.create(
            model="tiny", prompt=prompt, max_tokens=40, temperature=0,
            extra_body={"ignore_eos": True}).model_dump()["choices"][0]["text"]


if __name__ == "__main__":
    unittest.main()
