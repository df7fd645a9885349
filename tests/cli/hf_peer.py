#!/usr/bin/env python3
"""hf_peer.py — the Hugging Face side of the interop checks and benches.

Run with the venv's python (tests/venv.sh makes it: pip's torch,
transformers, tokenizers).  Each command reads what hat wrote and prints
JSON lines that the shell scripts compare with hat's own output:

  chat DIR CASES           apply_chat_template with DIR's tokenizer_config.json
                           on {"id","messages","tools"?,"add_generation_prompt",
                           "enable_thinking"?} lines -> {"id","text"}
  harness-chat DIR SYS TRAJ  the same for trajectories rendered under their
                           harness: line i of SYS is harness-render's
                           {"id","text"} for trajectory i with no messages,
                           whose system text and tools are taken apart and
                           handed to the template with the messages
  generate DIR PROMPTS N   greedy transformers generate on {"id","ids"} lines
                           -> {"id","gen","logprobs"} (log-softmax of the
                           model's own logits, as hat's --logprobs)
  save DIR SEED            a small random Qwen3 saved by save_pretrained
  train DIR B T STEPS      timed AdamW steps (fp32, eager) on random ids
                           -> {"tokens_per_s", "step_s"}
  decode DIR PROMPT N REPS tokens/s of generate at batch 1, best of REPS
                           (time for N+1 new tokens minus time for 1)
  encode TOKJSON FILE REPS HF tokenizers on FILE's lines, best of REPS
                           -> {"load_s","encode_s","bytes","tokens"}
"""
import json
import sys
import time


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def out(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def tokenizer(d):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(d)


def render(tok, messages, tools, gen, think):
    kw = {}
    if think is not None:
        kw["enable_thinking"] = think
    return tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen,
                                   tokenize=False, **kw)


def cmd_chat(d, cases):
    tok = tokenizer(d)
    for c in jsonl(cases):
        out({"id": c["id"], "text": render(tok, c["messages"], c.get("tools"),
                                           c.get("add_generation_prompt", False),
                                           c.get("enable_thinking"))})


def split_system(text):
    """harness-render's text for no messages -> (system text or None, tools)."""
    head, tail = "<|im_start|>system\n", "<|im_end|>\n"
    assert text.startswith(head) and text.endswith(tail), text[:80]
    body = text[len(head):-len(tail)]
    marker = "# Tools\n\nYou may call one or more functions"
    if marker not in body:
        return body, None
    sys_text, rest = body.split(marker, 1)
    tools = rest.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    return (sys_text[:-2] if sys_text else None), [json.loads(t) for t in tools.split("\n")]


def cmd_harness_chat(d, sysfile, traj):
    tok = tokenizer(d)
    for i, (s, t) in enumerate(zip(jsonl(sysfile), jsonl(traj))):
        system, tools = split_system(s["text"])
        msgs = [m for m in t["messages"] if m.get("role") != "system"]
        if system is not None:
            msgs = [{"role": "system", "content": system}] + msgs
        out({"id": t.get("id", i), "text": render(tok, msgs, tools, False, None)})


def model(d):
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()


def greedy(n):
    from transformers import GenerationConfig
    return GenerationConfig(max_new_tokens=int(n), do_sample=False, eos_token_id=None,
                            pad_token_id=0)


def cmd_generate(d, prompts, n):
    import torch
    m = model(d)
    for p in jsonl(prompts):
        ids = torch.tensor([p["ids"]])
        with torch.no_grad():      # no stop id: hat's generate has none without --stop
            g = m.generate(ids, attention_mask=torch.ones_like(ids), generation_config=greedy(n),
                           output_logits=True, return_dict_in_generate=True)
        gen = g.sequences[0, ids.shape[1]:].tolist()
        lp = [torch.log_softmax(s[0].double(), -1)[t].item() for s, t in zip(g.logits, gen)]
        out({"id": p.get("id"), "gen": gen, "logprobs": lp})


def cmd_save(d, seed):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(int(seed))
    cfg = Qwen3Config(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                      max_position_embeddings=128, tie_word_embeddings=False,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)
    m = Qwen3ForCausalLM(cfg)
    with torch.no_grad():               # norms away from 1, so they are tested too
        for name, p in m.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    m.save_pretrained(d, safe_serialization=True)


def cmd_train(d, B, T, steps, precision="fp32"):
    import contextlib
    import torch
    B, T, steps = int(B), int(T), int(steps)
    # bf16: torch's CPU autocast (bf16 matmuls, fp32 weights and optimiser),
    # the peer of hat's HAT_GEMM=bf16
    cast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
            else contextlib.nullcontext())
    m = model(d).train()
    V = m.config.vocab_size
    # hat's sft-step: betas (0.9, 0.95), decay 0.1 on matrices only, clip 1.0
    mats = [p for p in m.parameters() if p.dim() >= 2]
    rest = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": mats, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=1e-4, betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(1)
    times = []
    for s in range(steps + 2):
        x = torch.randint(0, V, (B, T + 1), generator=g)
        t0 = time.perf_counter()
        with cast:
            logits = m(input_ids=x[:, :-1], use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, V), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    t = sorted(times[2:])[len(times[2:]) // 2]
    out({"tokens_per_s": B * T / t, "step_s": t, "torch": torch.__version__,
         "threads": torch.get_num_threads()})


def cmd_decode(d, prompt, n, reps):
    import torch
    m = model(d)
    V = m.config.vocab_size
    ids = torch.randint(0, V, (1, int(prompt)), generator=torch.Generator().manual_seed(7))
    n = int(n)

    def run(k):
        t0 = time.perf_counter()
        with torch.no_grad():
            m.generate(ids, attention_mask=torch.ones_like(ids), generation_config=greedy(k))
        return time.perf_counter() - t0
    best = 0.0
    run(2)
    for _ in range(int(reps)):
        best = max(best, n / (run(n + 1) - run(1)))
    out({"decode_tokens_per_s": best})


def cmd_encode(tokjson, path, reps):
    t0 = time.perf_counter()
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokjson)
    load = time.perf_counter() - t0
    with open(path, encoding="utf-8", newline="\n") as f:   # lines end at \n only, as hat's
        lines = [line[:-1] if line.endswith("\n") else line for line in f]
    best, ntok = None, 0
    for _ in range(int(reps)):
        t0 = time.perf_counter()
        enc = tok.encode_batch(lines, add_special_tokens=False)
        t = time.perf_counter() - t0
        ntok = sum(len(e.ids) for e in enc)
        best = t if best is None else min(best, t)
    out({"load_s": load, "encode_s": best, "bytes": sum(len(x.encode()) + 1 for x in lines),
         "tokens": ntok})


if __name__ == "__main__":
    cmds = {"chat": cmd_chat, "harness-chat": cmd_harness_chat, "generate": cmd_generate,
            "save": cmd_save, "train": cmd_train, "decode": cmd_decode, "encode": cmd_encode}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
