"""ptrain-data: tokenize text files or folders into training data ptrain-run reads (docs/Data.md).

    ptrain-data INPUT... -o OUT (--vocab-size N [--model bpe|unigram] | --tokenizer tokenizer.json)
                [--format megatron|nanogpt] [--val-fraction 0.05] [--seed 0] [--ext .py,.txt,.md,.rst]
                [--min-frequency 2] [--eod "<|endoftext|>"]

Each input file is one document; a folder is walked (sorted, hidden entries skipped) for files whose names end
in one of --ext, read as UTF-8 with its line ends as they are ("\r\n" stays), so that decoding gives it back
exactly. A file that is not UTF-8 text (or holds a NUL) is skipped and named in one line. The documents are split into
training and validation by document: a random.Random(seed) shuffle of the sorted relative paths, the first
max(1, round(documents x val-fraction)) held out (at least one document stays for training).

The tokenizer (Hugging Face `tokenizers`, offline): either trained on the training documents only, a byte-level
BPE (GPT-2's scheme: ByteLevel pre-tokenizer and decoder, so that any text decodes back exactly) or a byte-level
Unigram of --vocab-size ids, the end-of-document token --eod first (id 0); or loaded from --tokenizer (its --eod
token must be in its vocabulary). OUT/tokenizer.json is the tokenizer used.

Every document is encoded and ended with the end-of-document id; then written as
  --format megatron (default): OUT/train.bin + OUT/train.idx and OUT/val.bin + OUT/val.idx, Megatron-LM's indexed
                   dataset, one sequence per document (python/ptrain/megatron_index.py; uint16 below 65,500 ids,
                   else int32, as Megatron's optimal_dtype);
  --format nanogpt: OUT/train.bin and OUT/val.bin, flat little-endian uint16 (uint32 above 65,536 ids);
and OUT/data.json, the declaration ptrain-run reads: {"format", "vocab_size", "eod", "tokenizer", "dtype"
(nanogpt), "documents", "tokens"}. The same inputs, options and tokenizers version give byte-identical files.
A progress bar (tqdm) counts the documents encoded.

Errors (exit 1, one line): an input that does not exist, no documents, too few documents to split, a vocabulary
smaller than the byte alphabet plus the special token (BPE: 257) or above 2^32, a tokenizer.json that does not
load or lacks --eod, an output folder that cannot be written.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

from ptrain import staging

DEFAULT_EXT = ".py,.txt,.md,.rst"


class DataToolError(Exception):
    pass


def list_documents(inputs, exts):
    """[(name, path)] of every document: a file as given, a folder's matching files (sorted); name is the path
    relative to the folder (the folder's own name first), the split's sort key."""
    out = []
    for inp in inputs:
        if os.path.isfile(inp):
            out.append((os.path.basename(inp), inp))
        elif os.path.isdir(inp):
            base = os.path.basename(os.path.normpath(inp))
            for dirpath, dirnames, filenames in os.walk(inp):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for f in sorted(filenames):
                    if not f.startswith(".") and f.endswith(exts):
                        path = os.path.join(dirpath, f)
                        out.append((base + "/" + os.path.relpath(path, inp).replace(os.sep, "/"), path))
        else:
            raise DataToolError(f"{inp}: no such file or folder")
    return sorted(out)


def read_documents(docs):
    """[(name, text)] of the UTF-8 documents, and the names of those that are not UTF-8 text."""
    texts, skipped = [], []
    for name, path in docs:
        try:
            with open(path, encoding="utf-8", newline="") as f:  # "\r\n" stays as it is
                text = f.read()
        except UnicodeDecodeError:
            skipped.append(name)
            continue
        if "\x00" in text:
            skipped.append(name)
            continue
        texts.append((name, text))
    return texts, skipped


def split(names, val_fraction, seed):
    """(train indices, val indices) of documents sorted by name: a seeded shuffle, the first ones held out."""
    if len(names) < 2:
        raise DataToolError(f"{len(names)} document(s): at least 2 are needed to split by document")
    order = list(range(len(names)))
    random.Random(seed).shuffle(order)
    held = min(len(names) - 1, max(1, round(len(names) * val_fraction)))
    return sorted(order[held:]), sorted(order[:held])


def train_tokenizer(texts, model, vocab_size, min_frequency, eod):
    """A byte-level BPE or Unigram tokenizer of vocab_size ids trained on `texts`, eod the special token 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if model == "bpe":
        if vocab_size < len(alphabet) + 1:
            raise DataToolError(f"--vocab-size {vocab_size}: a byte-level BPE needs at least {len(alphabet) + 1} ids "
                                f"(the {len(alphabet)} bytes and {eod!r})")
        tok = Tokenizer(models.BPE())
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=[eod],
                                      initial_alphabet=alphabet, show_progress=False)
    else:
        tok = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=[eod], initial_alphabet=alphabet,
                                          unk_token=None, show_progress=False)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


def load_tokenizer(path, eod):
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(path)
    except Exception as e:  # tokenizers raises its own Exception type for a malformed file
        raise DataToolError(f"--tokenizer {path}: not a tokenizers tokenizer.json ({e})")
    if tok.token_to_id(eod) is None:
        raise DataToolError(f"--tokenizer {path}: has no token {eod!r} (--eod names the end-of-document token)")
    return tok


def encode(tok, texts, eod_id, desc):
    """The token ids of each text, the end-of-document id appended; a tqdm bar over the documents."""
    import numpy as np
    from tqdm import tqdm

    out = []
    with tqdm(total=len(texts), unit="doc", desc=desc, dynamic_ncols=True, disable=None) as bar:
        for start in range(0, len(texts), 256):
            chunk = texts[start:start + 256]
            for enc in tok.encode_batch(chunk, add_special_tokens=False):
                out.append(np.asarray(enc.ids + [eod_id], dtype=np.int64))
            bar.update(len(chunk))
    return out


# The files of OUT (write, run): both formats', so that a run in one removes the other's.
OUTPUTS = ("tokenizer.json", "data.json", "train.bin", "val.bin", "train.idx", "val.idx")


def write(out_dir, fmt, vocab, train_docs, val_docs):
    """Writes the splits in `fmt`; returns the declaration's dtype."""
    import numpy as np

    from ptrain import megatron_index

    if fmt == "megatron":
        dtype = np.dtype(megatron_index.optimal_dtype(vocab))
        for name, docs in (("train", train_docs), ("val", val_docs)):
            megatron_index.write(os.path.join(out_dir, name), docs, dtype)
        return str(dtype)
    dtype = np.dtype(np.uint16 if vocab <= 65536 else np.uint32)
    for name, docs in (("train", train_docs), ("val", val_docs)):
        with open(os.path.join(out_dir, f"{name}.bin"), "wb") as f:
            for d in docs:
                f.write(d.astype(dtype.newbyteorder("<")).tobytes())
    return str(dtype)


def run(args):
    t0 = time.time()
    if (args.vocab_size is None) == (args.tokenizer is None):
        raise DataToolError("give either --vocab-size N (train a tokenizer) or --tokenizer tokenizer.json")
    if args.vocab_size is not None and not 1 <= args.vocab_size <= 1 << 32:
        raise DataToolError(f"--vocab-size {args.vocab_size}: must be in [1, 2^32]")
    if not 0 < args.val_fraction < 1:
        raise DataToolError(f"--val-fraction {args.val_fraction}: must be in (0, 1)")
    exts = tuple(e if e.startswith(".") else "." + e for e in args.ext.split(",") if e)
    texts, skipped = read_documents(list_documents(args.inputs, exts))
    if skipped:
        print(f"ptrain-data: skipped {len(skipped)} file(s) that are not UTF-8 text: {', '.join(skipped[:5])}"
              + (" ..." if len(skipped) > 5 else ""), flush=True)
    if not texts:
        raise DataToolError(f"no documents in {' '.join(args.inputs)} (files ending in {', '.join(exts)})")
    train_idx, val_idx = split([n for n, _ in texts], args.val_fraction, args.seed)
    train_texts, val_texts = [texts[i][1] for i in train_idx], [texts[i][1] for i in val_idx]
    if args.tokenizer:
        tok = load_tokenizer(args.tokenizer, args.eod)
    else:
        tok = train_tokenizer(train_texts, args.model, args.vocab_size, args.min_frequency, args.eod)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    eod_id = tok.token_to_id(args.eod)
    train_docs = encode(tok, train_texts, eod_id, "train")
    val_docs = encode(tok, val_texts, eod_id, "val")
    # Written into a staging folder inside OUT and moved into place at the end: a failed run leaves OUT as it
    # was, and a run in another --format leaves no file of the earlier one beside its own.
    created = not os.path.isdir(args.out)
    try:
        os.makedirs(args.out, exist_ok=True)
        stage = tempfile.mkdtemp(prefix=".ptrain-data-", dir=args.out)
    except OSError as e:
        raise DataToolError(f"-o {args.out}: cannot create the folder ({e.strerror})")
    try:
        tok.save(os.path.join(stage, "tokenizer.json"))
        dtype = write(stage, args.format, vocab, train_docs, val_docs)
        tokens = {"train": int(sum(len(d) for d in train_docs)), "val": int(sum(len(d) for d in val_docs))}
        decl = {"format": args.format, "vocab_size": vocab, "eod": eod_id, "tokenizer": "tokenizer.json",
                "documents": {"train": len(train_docs), "val": len(val_docs)}, "tokens": tokens}
        if args.format == "nanogpt":
            decl["dtype"] = dtype
        with open(os.path.join(stage, "data.json"), "w") as f:
            json.dump(decl, f, indent=1)
            f.write("\n")
        staging.publish(stage, args.out, OUTPUTS)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if created and not os.listdir(args.out):
            os.rmdir(args.out)
    print(f"ptrain-data: {len(texts)} documents ({len(train_docs)} train, {len(val_docs)} val), "
          f"{tokens['train']:,} + {tokens['val']:,} tokens of a vocabulary of {vocab} ({dtype}), "
          f"{args.format} files in {args.out} ({time.time() - t0:.1f} s)", flush=True)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="ptrain-data", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="text files or folders")
    p.add_argument("-o", "--out", required=True, help="the output folder")
    p.add_argument("--format", choices=("megatron", "nanogpt"), default="megatron")
    p.add_argument("--vocab-size", type=int, default=None, help="train a tokenizer of this many ids")
    p.add_argument("--model", choices=("bpe", "unigram"), default="bpe", help="the tokenizer to train")
    p.add_argument("--tokenizer", default=None, help="use this tokenizer.json instead of training one")
    p.add_argument("--min-frequency", type=int, default=2, help="BPE: the fewest occurrences of a merged pair")
    p.add_argument("--eod", default="<|endoftext|>", help="the end-of-document token")
    p.add_argument("--val-fraction", type=float, default=0.05, help="the share of documents held out")
    p.add_argument("--seed", type=int, default=0, help="the seed of the document split")
    p.add_argument("--ext", default=DEFAULT_EXT, help=f"file name endings in folders (default {DEFAULT_EXT})")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return run(args)
    except DataToolError as e:
        print(f"ptrain-data: error: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:
        print(f"ptrain-data: error: {e.filename}: {e.strerror}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
