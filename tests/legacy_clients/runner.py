"""The server inside the legacy-clients venv: one JSON request a line on stdin
({"command": NAME, **keyword arguments}), one JSON reply a line on stdout ({"result": ...} or
{"error": traceback}). Whatever the libraries print goes to stderr. One process serves a whole
test session, so torch and transformers are imported once."""

import importlib.metadata
import json
import sys
import traceback


def versions() -> dict:
    import transformers

    names = ("sentence-transformers", "optimum-onnx", "optimum", "transformers", "torch")
    found = {name: importlib.metadata.version(name) for name in names}
    return found | {"transformers_file": transformers.__file__}


def main() -> None:
    out, sys.stdout = sys.stdout, sys.stderr
    import clients
    import tiny_models

    commands = {
        "versions": versions,
        "make-sentence-transformer": tiny_models.sentence_transformer,
        "make-classifier": tiny_models.classifier,
        "make-seq2seq": tiny_models.seq2seq,
        "make-speech-seq2seq": tiny_models.speech_seq2seq,
        "sentence-transformers": clients.sentence_transformers,
        "cross-encoder": clients.cross_encoder,
        "optimum": clients.optimum,
        "optimum-seq2seq": clients.optimum_seq2seq,
        "optimum-speech-seq2seq": clients.optimum_speech_seq2seq,
        "optimum-generates": clients.optimum_generates,
    }
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"result": commands[request.pop("command")](**request)}
        except Exception:
            reply = {"error": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
