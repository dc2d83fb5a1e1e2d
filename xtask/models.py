"""Refreshes crates/config/data/models.json from LiteLLM's model list (`cargo xtask models`).

Downloads the `litellm` wheel from PyPI (no dependencies), reads its
`litellm/model_prices_and_context_window_backup.json` and keeps, for the chat models of the
providers mcpl's routes reach (openai, anthropic, gemini), what a request depends on: the
context window, the output limit, and whether the model takes images, PDFs and audio.
Usage: python3 xtask/models.py OUT_JSON [VERSION]
"""
import datetime
import glob
import json
import os
import subprocess
import sys
import tempfile
import zipfile

PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def main():
    out = sys.argv[1]
    spec = "litellm==%s" % sys.argv[2] if len(sys.argv) > 2 else "litellm"
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "pip", "download", spec, "--no-deps", "-q",
                        "-d", folder], check=True)
        wheel = glob.glob(os.path.join(folder, "litellm-*.whl"))[0]
        version = os.path.basename(wheel).split("-")[1]
        with zipfile.ZipFile(wheel) as archive:
            table = json.loads(archive.read("litellm/model_prices_and_context_window_backup.json"))
    models = {}
    for key, entry in sorted(table.items()):
        if not isinstance(entry, dict) or entry.get("mode") not in ("chat", "responses"):
            continue
        provider = PROVIDERS.get(entry.get("litellm_provider"))
        if provider is None:
            continue
        name = key.split("/", 1)[1] if key.startswith(provider + "/") else key
        if "/" in name:
            continue
        models.setdefault(provider, {})[name] = {
            "input": entry.get("max_input_tokens"),
            "output": entry.get("max_output_tokens"),
            "images": bool(entry.get("supports_vision")),
            "pdf": bool(entry.get("supports_pdf_input")),
            "audio": bool(entry.get("supports_audio_input")),
        }
    document = {
        "source": "litellm %s from PyPI, litellm/model_prices_and_context_window_backup.json" % version,
        "licence": "MIT (Copyright (c) 2023 Berri AI), see LICENSE-litellm",
        "date": datetime.date.today().isoformat(),
        "models": models,
    }
    with open(out, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%s: %d models from litellm %s" % (out, sum(len(m) for m in models.values()), version))


main()
