"""trainer.lora: the adapter computes x W^T + (alpha/r) x A^T B^T and starts as the layer it adapts; training
moves the adapters only; a checkpoint keeps the model's weights under their own names with the adapters
beside them; every reader merges them through one function (inference, averaging) into a model that
computes what the adapted one does; resume is bitwise; wrong settings are one-line errors. (The
imported Marian and M2M100 models' trip through LoRA and back to transformers:
tests/interop/test_lora_round_trip.py.)"""

from __future__ import annotations

import functools
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
from commands import error_line, run_module, train_tiny, translate
from test_fingerprint import CONFIG, corpus
from test_loop import BOS, EOS, PAD, TOY_OPTIONS, VOCAB, toy_dataset
from tiny_models import TINY, tiny_decoder_only, tiny_model, tiny_tokenizer
from toy_corpus import tiny_train_overrides

from seq2seq.checkpoint import LORA_KEY, model_weights, save_checkpoint
from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import make_batch
from seq2seq.errors import UserError
from seq2seq.inference.loading import load_for_inference
from seq2seq.model import build_encoder_only, build_from_config
from seq2seq.train.averaging import average_checkpoints
from seq2seq.train.fingerprint import check_same_run, run_fingerprint
from seq2seq.train.init_from import read_starting_point
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.lora import LoraLinear, adapted_layers, add_adapters, check_alignment_query, model_state
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.optim import build_adamw
from seq2seq.train.reporting import Reporter
from seq2seq.train.schedules import ScheduledLR, constant

LORA = {"rank": 4, "alpha": 8, "dropout": 0.1}
tokenizer = functools.cache(tiny_tokenizer)  # one sentencepiece model for the checkpoints written here


def tiny_encoder_only(vocab: int, *, pad_id: int = 0, dropout: float = 0.0) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_encoder_only(src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=pad_id, layers=2, d_model=32,
                              n_heads=4, ffn_dim=64, dropout=dropout).eval()  # fmt: skip


FAMILIES = {
    "encoder_decoder": tiny_model,
    "decoder_only": tiny_decoder_only,
    "encoder_only": tiny_encoder_only,
}


def inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A padded batch of sources and targets (ids 4..VOCAB-1, PAD after the end), (3, 7) and (3, 5)."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (3, 7), generator=generator)
    tgt = torch.randint(4, VOCAB, (3, 5), generator=generator)
    src[1, 5:], tgt[2, 3:] = PAD, PAD
    return src, tgt


def adapted(family: str, setting: dict[str, Any] | None = None, *, seed: int = 1) -> torch.nn.Module:
    """The tiny model of `family` with adapters whose B is random (as after training), in eval mode."""
    model = FAMILIES[family](VOCAB, pad_id=PAD)
    add_adapters(model, setting or LORA)
    torch.manual_seed(seed)
    with torch.no_grad():
        for layer in adapted_layers(model).values():
            layer.lora_b.normal_(0.0, 0.2)
    return model.eval()


def test_the_adapter_computes_the_layer_plus_its_scaled_low_rank_product() -> None:
    base = torch.nn.Linear(3, 2)
    with torch.no_grad():
        base.weight.copy_(torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]))
        base.bias.copy_(torch.tensor([0.5, -0.5]))
    layer = LoraLinear(base, rank=2, alpha=4.0)
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert layer.weight is base.weight and layer.bias is base.bias  # the same tensors, the same names
    assert torch.equal(layer.lora_b, torch.zeros(2, 2)) and layer.lora_a.abs().sum() > 0
    assert torch.equal(layer(x), base(x))  # B = 0: the layer it adapts
    with torch.no_grad():
        layer.lora_a.copy_(torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
        layer.lora_b.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
    # x W^T + b = [7.5, -1.5]; x A^T = [3, 5]; (x A^T) B^T = [3, 10]; alpha / r = 2
    assert torch.equal(layer(x), torch.tensor([[13.5, 18.5]]))
    assert set(layer.state_dict()) == {"weight", "bias", "lora_a", "lora_b"}


@pytest.mark.parametrize("family", FAMILIES)
def test_adapters_start_as_the_model_and_keep_its_names(family: str) -> None:
    model = FAMILIES[family](VOCAB, pad_id=PAD)
    before = {key: value.clone() for key, value in model.state_dict().items()}
    expected = model(*inputs())
    chosen = add_adapters(model, LORA)
    assert torch.equal(model(*inputs()), expected)
    assert chosen and all(name.rsplit(".", 1)[-1] in ("qkv", "q", "kv") for name in chosen)
    assert ("decoder.layers.0.cross_attn.kv" in chosen) == (family == "encoder_decoder")
    state = model_state(model, LORA)
    assert set(state["model"]) == set(before) and all(
        torch.equal(state["model"][k], v) for k, v in before.items()
    )
    assert set(state[LORA_KEY]["adapters"]) == {
        f"{name}.{part}" for name in chosen for part in ("lora_a", "lora_b")
    }
    assert {k: v for k, v in state[LORA_KEY].items() if k != "adapters"} == {
        "rank": 4, "alpha": 8.0, "dropout": 0.1, "targets": None, "train": []
    }  # fmt: skip
    trained = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trained == set(state[LORA_KEY]["adapters"])


def lora_trainer(
    out_dir: Path, setting: dict[str, Any] | None, *, max_updates: int, **options: Any
) -> Trainer:
    """The tiny encoder-decoder with trainer.lora `setting` on the toy set, dropout on (model and adapters),
    weight decay on (it would move a frozen weight that reached the optimizer)."""
    torch.manual_seed(0)
    dataset = toy_dataset()
    model = tiny_model(VOCAB, pad_id=PAD, dropout=0.1)
    add_adapters(model, setting)
    optimizer = build_adamw(model, lr=0.0, weight_decay=0.1)
    sampler = TokenBatchSampler(dataset.src_lengths, dataset.tgt_lengths, max_tokens=60, seed=3)
    schedule = partial(constant, peak_lr=1e-2, warmup=1)
    return Trainer(
        model=model, optimizer=optimizer, scheduler=ScheduledLR(optimizer, schedule),
        loss_fn=partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD), batches=sampler,
        make_batch=lambda indices: make_batch(dataset, indices, pad_id=PAD, bos_id=BOS, eos_id=EOS),
        validate=None, reporter=Reporter(log_dir=None, progress_bar=False), output_dir=out_dir,
        checkpoint_extras={"model_config": model.config},
        options=TrainerOptions(**{**TOY_OPTIONS, "max_updates": max_updates, "lora": setting, **options}),
        device=torch.device("cpu"),
    )  # fmt: skip


def test_training_moves_the_adapters_and_nothing_else(tmp_path: Path) -> None:
    trainer = lora_trainer(tmp_path, {**LORA, "train": ["decoder.final_norm.*"]}, max_updates=4)
    before = {key: value.clone() for key, value in trainer.model.state_dict().items()}
    trainer.fit()
    after = trainer.model.state_dict()
    moved = {key for key in before if not torch.equal(before[key], after[key])}
    trained = {
        key for key in before if key.endswith(("lora_a", "lora_b")) or key.startswith("decoder.final_norm.")
    }
    assert moved == trained
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert optimized == {id(p) for p in trainer.model.parameters() if p.requires_grad}
    assert len(optimized) == len(trained)


def test_a_checkpoint_holds_the_models_weights_and_the_adapters_beside_them(tmp_path: Path) -> None:
    trainer = lora_trainer(tmp_path, LORA, max_updates=3)
    trainer.fit()
    payload = torch.load(tmp_path / "last.pt", weights_only=True)
    plain = tiny_model(VOCAB, pad_id=PAD).state_dict()
    assert set(payload["model"]) == set(plain)  # the ordinary names, nothing else
    assert all(torch.equal(payload["model"][key], value) for key, value in plain.items())  # untrained
    lora = payload[LORA_KEY]
    assert (
        lora["rank"] == 4
        and lora["alpha"] == 8.0
        and len(lora["adapters"]) == 2 * len(adapted_layers(trainer.model))
    )
    assert any(value.abs().sum() > 0 for key, value in lora["adapters"].items() if key.endswith("lora_b"))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_merged_model_computes_what_the_adapted_one_does(family: str) -> None:
    model = adapted(family, {**LORA, "targets": ["qkv", "out", "up", "down"]})
    payload = model_state(model, LORA)
    merged = build_from_config(model.config).eval()
    merged.load_state_dict(model_weights(payload))
    assert not adapted_layers(merged)
    with torch.no_grad():
        expected, got = model(*inputs()), merged(*inputs())
        plain = build_from_config(model.config).eval()
        plain.load_state_dict(payload["model"])
        assert not torch.allclose(plain(*inputs()), expected, atol=1e-3)  # the adapters count
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def lora_checkpoint(path: Path, model: torch.nn.Module, setting: dict[str, Any], **extra: Any) -> Path:
    """A checkpoint as a LoRA run writes one: model_state's entries, model_config, step and a tokenizer."""
    payload = {**model_state(model, setting), "model_config": model.config, "step": 3,
               "tokenizer": {"src": tokenizer().to_bytes(), "tgt": None}, **extra}  # fmt: skip
    save_checkpoint(path, payload)
    return path


def test_load_for_inference_gives_the_merged_model(tmp_path: Path) -> None:
    model = adapted("encoder_decoder")
    path = lora_checkpoint(tmp_path / "lora.pt", model, LORA)
    loaded = load_for_inference(path, torch.device("cpu"))
    assert not adapted_layers(loaded.model)
    merged = model_weights(torch.load(path, weights_only=True))
    assert all(torch.equal(loaded.model.state_dict()[key], value) for key, value in merged.items())
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(*inputs()), model(*inputs()), rtol=1e-5, atol=1e-5)


def test_init_from_a_lora_checkpoint_starts_from_its_merged_model(tmp_path: Path) -> None:
    vocab = tokenizer()
    model = tiny_model(vocab.vocab_size, pad_id=vocab.pad_id)
    add_adapters(model, LORA)
    with torch.no_grad():
        for layer in adapted_layers(model).values():
            layer.lora_b.normal_(0.0, 0.2)
    path = lora_checkpoint(tmp_path / "lora.pt", model, LORA)
    start = read_starting_point(path)
    merged = model_weights(torch.load(path, weights_only=True))
    assert start.weights.keys() == merged.keys()
    assert all(torch.equal(start.weights[key], value) for key, value in merged.items())
    assert not torch.equal(
        merged["decoder.layers.0.cross_attn.q.weight"], model.decoder.layers[0].cross_attn.q.weight
    )


def test_averaging_lora_checkpoints_averages_their_merged_models(tmp_path: Path) -> None:
    models = [adapted("encoder_decoder", seed=seed) for seed in (1, 2)]
    paths = [
        lora_checkpoint(tmp_path / f"{i}.pt", model, LORA, optimizer={}) for i, model in enumerate(models)
    ]
    merged = [model_weights(torch.load(path, weights_only=True)) for path in paths]
    averaged = average_checkpoints(paths)
    assert LORA_KEY not in averaged and "optimizer" not in averaged
    expected = {key: ((merged[0][key].double() + merged[1][key].double()) / 2).float() for key in merged[0]}
    assert set(averaged["model"]) == set(expected)
    assert all(torch.equal(averaged["model"][key], value) for key, value in expected.items())
    qkv = "encoder.layers.0.self_attn.qkv.weight"
    assert not torch.equal(averaged["model"][qkv], torch.load(paths[0], weights_only=True)["model"][qkv])


def test_resume_with_lora_is_bitwise_identical(tmp_path: Path) -> None:
    straight = lora_trainer(tmp_path / "straight", LORA, max_updates=8)
    straight.fit()
    lora_trainer(tmp_path / "resumed", LORA, max_updates=4).fit()
    resumed = lora_trainer(tmp_path / "resumed", LORA, max_updates=8)
    resumed.resume_from(tmp_path / "resumed" / "last.pt")
    assert resumed.state.step == 4
    resumed.fit()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


@pytest.mark.parametrize(
    "saved, resumed, shown",
    [(LORA, {**LORA, "rank": 8}, "rank: 8"), (LORA, None, "trainer.lora=null"),
     (None, LORA, "it was trained with trainer.lora=null")],
)  # fmt: skip
def test_a_resume_with_other_lora_settings_is_refused(tmp_path: Path, saved, resumed, shown) -> None:
    lora_trainer(tmp_path, saved, max_updates=1).fit()
    trainer = lora_trainer(tmp_path, resumed, max_updates=2)
    with pytest.raises(UserError, match="use the settings it was trained with, or a new run_name") as error:
        trainer.resume_from(tmp_path / "last.pt")
    assert "\n" not in str(error.value) and shown in str(error.value) and "trainer.lora=" in str(error.value)


def test_the_fingerprint_holds_the_lora_settings(tmp_path: Path) -> None:
    files = corpus(tmp_path / "corpus")

    def fingerprint(lora: dict[str, Any] | None) -> dict[str, Any]:
        return run_fingerprint({**CONFIG, "trainer": {**CONFIG["trainer"], "lora": lora}}, files)

    assert fingerprint(None) == run_fingerprint(CONFIG, files)  # a run without LoRA keeps its fingerprint
    assert fingerprint({}) == fingerprint({"rank": 8, "alpha": 16.0})  # the defaults, given or not
    with pytest.raises(UserError, match=r"trainer\.lora\.rank: 4 → 8.*run_name") as error:
        check_same_run(Path("last.pt"), fingerprint(LORA), fingerprint({**LORA, "rank": 8}))
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match=r"trainer\.lora\.rank: unset → 4"):
        check_same_run(Path("last.pt"), fingerprint(None), fingerprint(LORA))


@pytest.mark.parametrize(
    "setting, message",
    [({"targets": ["q_proj"]}, r"trainer\.lora\.targets: 'q_proj' matches no linear layer of the model; its "
      r"linear layers are called down, kv, out, q, qkv, up \(a name, or a shell-style pattern"),
     ({"rnak": 4}, r"trainer\.lora has no setting rnak; its settings are rank, alpha, dropout, targets, "
      "train"),
     ({"rank": 0}, r"trainer\.lora\.rank=0 must be a whole number of at least 1"),
     ({"dropout": 1.0}, r"trainer\.lora\.dropout=1\.0 must be in \[0, 1\)"),
     ({"targets": "qkv"}, r"trainer\.lora\.targets='qkv' must be a list"),
     ({"train": ["*norrm*"]}, r"trainer\.lora\.train pattern '\*norrm\*' matches no parameter; names look "
      "like")],
)  # fmt: skip
def test_wrong_settings_are_one_line_errors(setting: dict[str, Any], message: str) -> None:
    model = tiny_model(VOCAB)
    with pytest.raises(UserError, match=message) as error:
        add_adapters(model, setting)
    assert "\n" not in str(error.value)


def test_guided_alignment_with_an_adapted_cross_attention_query_is_refused() -> None:
    chosen = add_adapters(tiny_model(VOCAB), {})
    with pytest.raises(
        UserError, match=r"loss\.alignment_weight=0\.5 .* leave q out of trainer\.lora\.targets"
    ):
        check_alignment_query(chosen, 0.5)
    check_alignment_query(chosen, 0.0)
    check_alignment_query(add_adapters(tiny_model(VOCAB), {"targets": ["qkv", "kv"]}), 0.5)


def test_a_pattern_target_and_the_encoder_only_head() -> None:
    model = tiny_model(VOCAB)
    chosen = add_adapters(model, {"targets": ["decoder.*.qkv"]})
    assert chosen == [f"decoder.layers.{index}.self_attn.qkv" for index in range(TINY["decoder_layers"])]
    with pytest.raises(UserError, match="has LoRA adapters already"):
        add_adapters(model, {})
    qe = tiny_encoder_only(VOCAB)
    assert add_adapters(qe, {"targets": ["qkv", "head.0"], "train": ["head.3.*"]})[-1] == "head.0"
    assert {name for name, p in qe.named_parameters() if p.requires_grad} >= {
        "head.3.weight",
        "head.0.lora_b",
    }


def test_a_trainer_refuses_a_model_without_the_adapters_its_settings_add(tmp_path: Path) -> None:
    trainer = lora_trainer(tmp_path, None, max_updates=1)
    parts = {
        name: getattr(trainer, name) for name in ("optimizer", "scheduler", "loss_fn", "batches", "reporter")
    }
    with pytest.raises(UserError, match=r"trainer\.lora is set but the model has no adapters: call"):
        Trainer(model=trainer.model, **parts, make_batch=trainer.make_batch, validate=None,
                output_dir=tmp_path, checkpoint_extras={}, options=TrainerOptions(lora=LORA),
                device=torch.device("cpu"))  # fmt: skip


@pytest.mark.slow
def test_a_lora_run_on_the_command_line(corpus: Path, tmp_path: Path) -> None:
    """seq2seq-train with trainer.lora from a run's best.pt: the end of the run (snapshots averaged, the
    final choice, tuned decoding) works on merged models, averaged.pt is an ordinary checkpoint,
    seq2seq-translate reads the LoRA checkpoint; the command again with another rank is refused."""
    base = train_tiny(corpus, tmp_path / "base")
    settings = [f"init_from={base / 'best.pt'}", "~model", "~data.tokenizer.vocab_size",
                "trainer.average_fraction=0.5", "trainer.snapshot_every=1", "trainer.tune_decoding=true",
                "trainer.tune_decoding_sentences=4"]  # fmt: skip
    run = train_tiny(corpus, tmp_path / "lora", *settings, "trainer.lora={rank:4,alpha:8}")
    last, averaged = (torch.load(run / name, weights_only=True) for name in ("last.pt", "averaged.pt"))
    start = torch.load(base / "best.pt", weights_only=True)["model"]
    assert last["lora"]["rank"] == 4 and all(torch.equal(last["model"][k], v) for k, v in start.items())
    assert "lora" not in averaged and averaged["model"].keys() == start.keys()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final"]["checkpoint"] and summary["decoding"] is not None
    result, output = translate(run, tmp_path, ["the man sees the dog", "water"])
    assert result.returncode == 0 and len(output.read_text().splitlines()) == 2, result.stderr[-2000:]
    overrides = tiny_train_overrides(corpus, run, *settings, "trainer.lora={rank:8}")
    again = run_module("seq2seq.cli.train", *overrides, cwd=tmp_path)
    assert "trainer.lora.rank: 4 → 8" in error_line(again)
