from onnxlint.cli import run

run()
