"""`bertology serve`'s options, declared once (flag, default, help, range): the CLI's parser and
`create_app` read the same dataclass. Defaults follow text-embeddings-inference where it has the option."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import DEVICE, NON_NEGATIVE, POSITIVE, POSITIVE_NUMBER, Check, OptionError, check_options, option
from .guard import ENV_KEY, is_loopback, key_problem

PORT = Check("in [0, 65535] (0: any free port)", lambda v: 0 <= v <= 65535)
HOST = Check("a host name or address", lambda v: bool(v.strip()))


@dataclass
class ServeOptions:
    model: str = option(
        help="a model directory bertology.load reads (backbone, MLM, classification, tagging, QA), "
        "with its tokenizer.json",
        metavar="DIR",
    )
    tokenizer: str | None = option(None, "default: the model directory's tokenizer.json", metavar="FILE_OR_DIR")
    host: str = option(
        "127.0.0.1", "address to listen on (another machine can reach it only if you say so)", check=HOST
    )
    port: int = option(8080, "TCP port", check=PORT)
    pooling: str = option("mean", "how /embed makes one vector of a text's token vectors", choices=("mean", "cls"))
    max_batch_tokens: int = option(
        16384,
        "tokens in one forward pass; concurrent requests are grouped up to it, a larger request is refused (413)",
        check=POSITIVE,
    )
    max_batch_requests: int = option(64, "requests in one forward pass (1: no dynamic batching)", check=POSITIVE)
    max_wait_ms: float = option(
        0.0,
        "how long an idle worker waits for more requests to join a batch (requests "
        "that arrive while a batch runs join the next one anyway)",
        check=NON_NEGATIVE,
    )
    max_client_batch_size: int = option(32, "inputs in one request; more are refused (413)", check=POSITIVE)
    max_concurrent_requests: int = option(512, "requests queued or running; more are refused (429)", check=POSITIVE)
    max_body_bytes: int = option(2_000_000, "request body size; larger ones are refused (413)", check=POSITIVE)
    bf16: bool = option(
        False,
        "bf16 autocast for every forward pass on the CPU: pays where the CPU multiplies bf16 "
        "natively (AMX; see bench/serve.py), answers differ from fp32 by about 1e-3 (on a GPU "
        "autocast is always on: bf16, or fp16 before Ampere)",
    )
    int8: bool = option(
        False,
        "the model's linear layers as dynamic int8 layers (CPU only: int8 weights per output "
        "channel, activations quantized per call; bench/ort.py measures speed and accuracy); "
        "not with --bf16 or --compile",
    )
    device: str = option(
        "auto", "where the job runs: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N", check=DEVICE
    )
    compile: bool = option(
        False,
        "torch.compile the model's blocks with frozen weights; each new batch shape compiles first, for "
        "seconds to minutes. On the CPU it is slower than the default eager path (bench/ort.py --compile, "
        "docs/export.md) and warns so: leave it off there",
    )
    quiet: bool = option(False, "no access log")
    api_key: str | None = option(
        None,
        f"a key every request but /health must send as `Authorization: Bearer KEY` "
        f"(401 otherwise); default ${ENV_KEY}, which keeps it out of process lists",
        metavar="KEY",
    )
    allow_anonymous: bool = option(False, "serve a --host other machines can reach without --api-key")
    read_timeout: float = option(
        30.0,
        "seconds a client may take to send a request's head (after connecting or "
        "after its previous answer) and again its body; later: 408, connection closed",
        check=POSITIVE_NUMBER,
    )
    write_timeout: float = option(
        30.0, "seconds a client may leave its answer unread before the connection is cut", check=POSITIVE_NUMBER
    )
    shutdown_grace: float = option(
        30.0,
        "on SIGTERM or Ctrl-C: seconds to answer the requests already received; "
        "then the rest are cancelled and the server exits",
        check=NON_NEGATIVE,
    )

    def __post_init__(self):
        check_options(self)
        if self.int8 and (self.bf16 or self.compile):
            raise OptionError(
                f"--int8 with {'--bf16' if self.bf16 else '--compile'}: choose one (the int8 layers run "
                "their own kernels, which neither autocast nor compile reach)"
            )
        if self.api_key is not None and (why := key_problem(self.api_key)):
            raise OptionError(f"--api-key: {why}")  # never echo the key itself
        if self.api_key is None and not self.allow_anonymous and not is_loopback(self.host):
            raise OptionError(
                f"--host {self.host}: other machines could use the server without a key; give "
                f"--api-key KEY (or set ${ENV_KEY}), or --allow-anonymous to serve them anyway"
            )
