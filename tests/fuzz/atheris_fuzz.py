"""Coverage-guided fuzzing of the lint path with atheris (libFuzzer for Python).

Optional: ``pip install '.[fuzz]'`` (atheris ships wheels for Linux and macOS). Usage::

    python tests/fuzz/atheris_fuzz.py -max_total_time=600 -rss_limit_mb=4096 CORPUS_DIR

Each input picks one of four shapes with its first byte: raw bytes, a seed model with
field mutations, a seed with byte mutations, or mutated ONNX text. The invariants are the
ones of ``tests/fuzz/test_fuzz_models.py`` (``check_input``); a violated invariant or an
escaped exception is a crash, written by libFuzzer as ``crash-*`` in the working folder.
Seeds are written to CORPUS_DIR on first use so libFuzzer starts from valid models.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["onnxlint"]):
    # import the engine and every rule module now, inside the instrumented block: the CLI
    # imports them lazily, and a module imported later would run without coverage feedback
    import onnxlint.engine
    import onnxlint.rule
    from tests.fuzz import corpus
    from tests.fuzz.test_fuzz_models import check_input

    onnxlint.rule.all_rules()


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 3)
    pool = corpus.seeds()
    if mode == 0:
        check_input(fdp.ConsumeBytes(fdp.remaining_bytes()))
        return
    rng = random.Random(fdp.ConsumeInt(4))
    if mode == 1:
        _, base = pool[fdp.ConsumeIntInRange(0, len(pool) - 1)]
        names = sorted(corpus.FIELD_MUTATIONS)
        picks = [
            names[fdp.ConsumeIntInRange(0, len(names) - 1)]
            for _ in range(fdp.ConsumeIntInRange(1, 4))
        ]
        check_input(corpus.mutate_fields(base, picks, rng, fdp.ConsumeBool()))
    elif mode == 2:
        _, base = pool[fdp.ConsumeIntInRange(0, len(pool) - 1)]
        check_input(corpus.mutate_bytes(base, rng, fdp.ConsumeIntInRange(1, 8)))
    else:
        texts = sorted(corpus._TEXT_SEEDS.values())
        base = texts[fdp.ConsumeIntInRange(0, len(texts) - 1)].encode()
        check_input(corpus.mutate_bytes(base, rng, fdp.ConsumeIntInRange(1, 6)), suffix=".onnxtxt")


def _write_seeds(argv: list[str]) -> None:
    folders = [Path(a) for a in argv[1:] if not a.startswith("-")]
    for folder in folders[:1]:
        folder.mkdir(parents=True, exist_ok=True)
        for i, (_, data) in enumerate(corpus.seeds()):
            # mode byte 0 (raw bytes) followed by the seed itself
            (folder / f"seed-{i}").write_bytes(b"\x00" + data)


def main() -> None:
    _write_seeds(sys.argv)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
