"""Tiny random-weight models built locally with fixed seeds (no hub).

    python tests/engine/models.py            # builds both, prints their directories

Runs inside an engine environment (needs torch, transformers, tokenizers). Each
model lives in ``$CACHELINT_TEST_CACHE/engine/models/<name>-<key>`` where the key
hashes this file and the transformers version, so a changed recipe or a
different transformers builds a fresh directory and an unchanged one is reused.
The Whisper directory name contains ``whisper`` because vLLM 0.10.2's scheduler
asserts it.
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import os
import random
import shutil
import sys
from pathlib import Path

SEED = 0

# A deterministic corpus for the tokenizers: a few hundred sentences made from
# fixed word lists, shuffled with a fixed seed.
_SUBJECTS = ["the cache", "a scheduler", "the engine", "every request", "this model", "the decoder", "an encoder"]
_VERBS = ["reads", "stores", "computes", "allocates", "frees", "schedules", "returns", "measures"]
_OBJECTS = ["the value once", "a block table", "the tokens", "one step", "the audio", "many prompts", "a kv cache"]
_TAILS = ["quickly.", "again and again.", "per step.", "at start-up.", "on the cpu.", "without a hub.", "today."]

LLAMA_SPECIALS = ["<unk>", "<s>", "</s>"]
WHISPER_SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|transcribe|>",
    "<|translate|>",
    "<|notimestamps|>",
    "<|nocaptions|>",
    "<|startofprev|>",
    "<|startoflm|>",
    "<|prev|>",
]


def corpus() -> list[str]:
    rng = random.Random(SEED)
    lines = [f"{s} {v} {o} {t}" for s in _SUBJECTS for v in _VERBS for o in _OBJECTS for t in _TAILS[:2]]
    rng.shuffle(lines)
    return lines


def cache_dir() -> Path:
    root = Path(os.environ.get("CACHELINT_TEST_CACHE", Path.home() / ".cache" / "cachelint-tests"))
    return root / "engine" / "models"


def _key() -> str:
    import transformers

    h = hashlib.sha256(inspect.getsource(sys.modules[__name__]).encode())
    h.update(transformers.__version__.encode())
    return h.hexdigest()[:12]


def _train_bpe(specials: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    return tok


def _bpe_parts(tok) -> tuple[dict[str, int], list[tuple[str, str]]]:
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def _build(name: str, make) -> Path:
    root = cache_dir()
    dest = root / f"{name}-{_key()}"
    if (dest / ".complete").exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".lock-{name}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / ".complete").exists():
            return dest
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        make(tmp)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        (dest / ".complete").write_text(_transformers_version() + "\n")
        # an older recipe's build for the same transformers is stale; other versions' builds are kept
        for old in root.glob(f"{name}-*"):
            marker = old / ".complete"
            if old != dest and marker.exists() and marker.read_text().strip() == _transformers_version():
                shutil.rmtree(old, ignore_errors=True)
    return dest


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


def _make_llama(out: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = _train_bpe(LLAMA_SPECIALS, 512)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    hf_tok.model_max_length = 512
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.1,
        bos_token_id=tok.token_to_id("<s>"),
        eos_token_id=tok.token_to_id("</s>"),
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(out)
    hf_tok.save_pretrained(out)


def _whisper_tokenizer(tok):
    from transformers.models.whisper import tokenization_whisper as tw

    vocab, merges = _bpe_parts(tok)
    specials = dict(unk_token="<|endoftext|>", bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    cls = tw.WhisperTokenizer
    if "vocab" in inspect.signature(cls.__init__).parameters:  # transformers >= 5
        return _with_specials(cls(vocab=vocab, merges=merges, **specials))
    # transformers 4: the fast class takes files
    import tempfile

    from transformers import WhisperTokenizerFast

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "vocab.json").write_text(json.dumps(vocab))
        (Path(d) / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        return _with_specials(
            WhisperTokenizerFast(
                vocab_file=str(Path(d) / "vocab.json"), merges_file=str(Path(d) / "merges.txt"), **specials
            )
        )


def _with_specials(hf_tok):
    """Register the Whisper control tokens (already in the vocabulary) as unsplittable special tokens."""
    from tokenizers import AddedToken

    before = len(hf_tok)
    hf_tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in WHISPER_SPECIALS], special_tokens=True)
    assert len(hf_tok) == before, "control tokens must keep their trained ids"
    return hf_tok


def _make_whisper(out: Path) -> None:
    import torch
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperProcessor

    tok = _train_bpe(WHISPER_SPECIALS, 512)
    hf_tok = _whisper_tokenizer(tok)
    ids = {t: hf_tok.convert_tokens_to_ids(t) for t in WHISPER_SPECIALS}
    assert len(set(ids.values())) == len(ids), ids
    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    config = WhisperConfig(
        vocab_size=len(hf_tok),
        num_mel_bins=80,
        encoder_layers=1,
        encoder_attention_heads=4,
        decoder_layers=2,
        decoder_attention_heads=4,
        d_model=256,
        encoder_ffn_dim=512,
        decoder_ffn_dim=512,
        max_source_positions=1500,
        max_target_positions=448,
        pad_token_id=eot,
        bos_token_id=eot,
        eos_token_id=eot,
        decoder_start_token_id=sot,
        begin_suppress_tokens=None,
        suppress_tokens=None,
        init_std=0.1,
        torch_dtype="float32",
    )
    torch.manual_seed(SEED)
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config.forced_decoder_ids = None
    model.save_pretrained(out)
    WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=hf_tok).save_pretrained(out)


def tiny_llama() -> Path:
    return _build("tiny-llama", _make_llama)


def tiny_whisper() -> Path:
    return _build("tiny-whisper", _make_whisper)


def synthetic_audio(seconds: float = 2.0, sr: int = 16000, tone: float = 440.0):
    """A fixed clip: two tones and seeded noise, float32 in [-1, 1], with its sampling rate."""
    import numpy as np

    t = np.arange(int(seconds * sr), dtype=np.float64) / sr
    rng = np.random.default_rng(SEED)
    wave = 0.4 * np.sin(2 * np.pi * tone * t) + 0.2 * np.sin(2 * np.pi * 1250 * t) + 0.05 * rng.standard_normal(t.size)
    return wave.astype(np.float32), sr


if __name__ == "__main__":
    print(tiny_llama())
    print(tiny_whisper())
