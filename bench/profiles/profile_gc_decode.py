"""What the cyclic GC adds to decoding insert documents when the server keeps them (in-process, no server).

    .venv/bin/python -m bench.profiles.profile_gc_decode [--scale 100] [--frames 300]

Decodes the kind-1 `documents` of the first `--frames` cached insert frames with the project's
CodecOptions, (a) dropping each batch, (b) retaining every batch (as a server that keeps measurements in
open buckets does), (c) retaining with the GC disabled. CPU µs per document (process time).
"""

from __future__ import annotations

import argparse
import gc
import time

import bson

from bench.messages import op_msg_sections, open_frames
from bench.profiles._server import frames_path
from tidemark.protocol.codec import CODEC_OPTIONS


def decode_cost(sections: list[bytes], *, retain: bool, gc_enabled: bool = True) -> float:
    """CPU µs per document to decode every section."""
    kept = []
    docs = 0
    (gc.enable if gc_enabled else gc.disable)()
    try:
        t0 = time.process_time()
        for section in sections:
            batch = bson.decode_all(section, CODEC_OPTIONS)
            docs += len(batch)
            if retain:
                kept.append(batch)
        return (time.process_time() - t0) * 1e6 / max(docs, 1)
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=100)
    p.add_argument("--frames", type=int, default=300)
    args = p.parse_args(argv)
    mm, offsets = open_frames(frames_path(args.scale))
    sections = []
    for offset, length in offsets[:args.frames]:
        _, sequences = op_msg_sections(mm[offset:offset + length])
        sections.append(b"".join(bytes(d) for d in sequences["documents"]))
    print(f"drop each batch, GC on:  {decode_cost(sections, retain=False):.2f} us/doc")
    print(f"retain batches, GC on:   {decode_cost(sections, retain=True):.2f} us/doc")
    print(f"retain batches, GC off:  {decode_cost(sections, retain=True, gc_enabled=False):.2f} us/doc")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
