"""Rebuild the shipped neural PHEE model (v2): run H's recipe trained on train + dev.

The recipe was fixed on dev with train-only runs (run H, seeds 14 and 15: the model
cards of ``clinex/resources/models/pv_transformer`` and ``pv_onnx``). This script

1. fine-tunes :class:`clinex.pv.models.transformer.TransformerExtractor` with that
   recipe (MiniLM-L6, ``variant=joint``, 2 frozen blocks, 8 epochs, lr 2e-4, seed 13)
   on PHEE train + dev, without early stopping (no held-out dev is left: the final
   epoch is kept; run H's best epochs 6-8 were within 0.005 of each other);
2. gives it the decoding parameters, the sentence gate and the calibrated
   ``event_threshold`` of a **train-only** model (``--calibrated-from``, default the
   shipped v1 checkpoint folder you kept): a gate stacked on the new model's own dev
   predictions would have been fitted on sentences the model was trained on;
3. exports it to ONNX (``clinex pv export-onnx``) into ``OUT/onnx``.

Usage::

    python bench/pv_train_dev.py --out /tmp/v2 --calibrated-from /path/to/v1_transformer [--threads 2]

Needs the ``train`` extra. Prints one JSON object on the last line (training minutes,
folders). On this 2-core machine: 11.4 min with one thread while another job ran.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from pv_neural import _data_dir  # bench/ is on sys.path when a script here runs: one PHEE-folder rule

#: Run H's recipe (pv_transformer/MODEL_CARD.md, "Run H"), seed 13.
RECIPE = {
    "encoder": "minilm", "variant": "joint", "freeze_layers": 2, "epochs": 8, "lr": 2e-4,
    "trigger_fallback": 0.0, "attributes": "lexicon", "join_adjacent": "main,sub", "seed": 13,
    "max_minutes": 60.0,
}
#: Parameters copied from the train-only model: decoding choices made on dev and the gate's.
FROM_CALIBRATED = (
    "attributes", "fallback_gate", "event_threshold", "attribute_scope", "no_effect_min_prob",
    "trigger_fallback", "join_adjacent", "decoder", "predict_batch_size",
)


def main(argv: list[str] | None = None) -> int:
    """Train, calibrate from the train-only model, export; exit 0 (2 on a clinex error)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="new folder (refused if it exists)")
    ap.add_argument("--calibrated-from", type=Path, required=True, help="train-only transformer model folder")
    ap.add_argument("--phee", type=Path, default=_data_dir(), help="folder with train.json and dev.json")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="clinex.pv.transformer.v2")
    args = ap.parse_args(argv)

    from clinex.errors import ClinexError, InputError, report_to_stderr

    try:
        if args.out.exists():
            raise InputError("output folder exists; choose a new one", path=args.out)
        meta_path = args.calibrated_from / "model.json"
        if not meta_path.is_file():
            raise InputError("no model.json in the train-only model folder", path=args.calibrated_from)
        from clinex.pv.formats.phee_json import read_phee_json
        from clinex.pv.models.transformer import TransformerExtractor
        from clinex.pv.models.transformer.export import export_onnx

        train = list(read_phee_json(args.phee / "train.json")) + list(read_phee_json(args.phee / "dev.json"))
        model = TransformerExtractor(**RECIPE, threads=args.threads)
        start = time.monotonic()
        model.fit(train, None, log=lambda line: print(line, file=sys.stderr, flush=True))
        minutes = (time.monotonic() - start) / 60
        folder = args.out / "transformer"
        model.save(folder)
        meta = json.loads((folder / "model.json").read_text(encoding="utf-8"))
        calibrated = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["params"].update({k: calibrated["params"][k] for k in FROM_CALIBRATED})
        meta["name"] = args.name
        meta["gate"], meta["calibration"] = calibrated["gate"], calibrated["calibration"]
        shutil.copy(args.calibrated_from / calibrated["gate"]["file"], folder / calibrated["gate"]["file"])
        (folder / "model.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        export_onnx(folder, args.out / "onnx")
    except ClinexError as exc:
        report_to_stderr(exc)
        return 2
    print(json.dumps({"train_sentences": len(train), "train_minutes": round(minutes, 2),
                      "transformer": str(folder), "onnx": str(args.out / "onnx")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
