"""Synthetic data for the public-script sweep (bench/public/README.md), each in its script's own
format, seeded; nothing is downloaded. Usage: python make_data.py KIND DIR, KIND one of seq2seq,
yunjey, llama2c, enwik8, cyclegan, mnist, pets."""

import gzip
import os
import random
import struct
import sys

import numpy as np

random.seed(0)
np.random.seed(0)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = ["".join(random.choice(LETTERS) for _ in range(random.randint(2, 8))) for _ in range(1500)]


def seq2seq(root: str) -> None:
    """The PyTorch tutorial's eng-fra.txt: tab-separated pairs, English first (it reverses them)."""
    os.makedirs(f"{root}/data", exist_ok=True)
    fr_eval = ["je suis trop froid .", "elle a cinq ans de moins que moi .", "elle est trop petit .",
               "je ne crains pas de mourir .", "c est un jeune directeur plein de talent ."]
    prefixes = ["I am", "He is", "She is", "You are", "We are", "They are"]
    en_words, fr_words = WORDS[:300], WORDS[300:600] + " ".join(fr_eval).replace(".", "").split()
    lines = []
    for i in range(3000):
        en = f"{random.choice(prefixes)} {' '.join(random.choices(en_words, k=random.randint(1, 5)))}."
        if i < 10:  # the sentences its evaluation translates
            fr = fr_eval[i % 5][:-2] + "."
        else:
            fr = " ".join(random.choices(fr_words, k=random.randint(2, 8))) + "."
        lines.append(f"{en}\t{fr}")
    with open(f"{root}/data/eng-fra.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def yunjey(root: str) -> None:
    """yunjey's language model's train.txt: whitespace-separated words, one sentence a line."""
    os.makedirs(f"{root}/data", exist_ok=True)
    vocab = WORDS[:2000]
    with open(f"{root}/data/train.txt", "w", encoding="utf-8") as f:
        n = 0
        while n < 20 * 30 * 21 + 10:  # 20 rows x 30 tokens x 20 steps an epoch (+ the target shift)
            line = random.choices(vocab, k=random.randint(5, 25))
            f.write(" " + " ".join(line) + " \n")
            n += len(line) + 1


def llama2c(root: str, vocab: int = 512) -> None:
    """llama2.c's pretokenized shards (uint16 token ids) for a custom vocabulary."""
    d = f"{root}/data/tok{vocab}"
    os.makedirs(d, exist_ok=True)
    for s in range(3):  # shard 0 is val, 1.. train
        np.random.randint(0, vocab, size=200_000).astype(np.uint16).tofile(f"{d}/data{s:02d}.bin")


def enwik8(root: str) -> None:
    """x-transformers' enwik8.gz: 95.5 M bytes of text-like characters."""
    os.makedirs(f"{root}/data", exist_ok=True)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz      \n.,<>[]'", dtype=np.uint8)
    data = letters[np.random.randint(0, len(letters), size=int(95.5e6))]
    with gzip.open(f"{root}/data/enwik8.gz", "wb", compresslevel=1) as f:
        f.write(data.tobytes())


def cyclegan(root: str, name: str = "synth", n_train: int = 40, n_test: int = 10) -> None:
    """PyTorch-GAN's unpaired image folders: data/NAME/{train,test}/{A,B}/*.jpg."""
    from PIL import Image

    for mode, n in (("train", n_train), ("test", n_test)):
        for ab in "AB":
            d = f"{root}/data/{name}/{mode}/{ab}"
            os.makedirs(d, exist_ok=True)
            for i in range(n):
                pixels = np.random.randint(0, 256, (48, 48, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(f"{d}/{i:04d}.jpg")


def mnist(root: str, n_train: int = 2560, n_test: int = 400) -> None:
    """torchvision's raw MNIST files (idx format) of random digits under ROOT/MNIST/raw."""
    d = f"{root}/MNIST/raw"
    os.makedirs(d, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        with open(f"{d}/{prefix}-images-idx3-ubyte", "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28))
            f.write(np.random.randint(0, 256, (n, 28, 28), dtype=np.uint8).tobytes())
        with open(f"{d}/{prefix}-labels-idx1-ubyte", "wb") as f:
            f.write(struct.pack(">II", 2049, n))
            f.write(np.random.randint(0, 10, n, dtype=np.uint8).tobytes())


def pets(root: str, n: int = 160, breeds: tuple = ("abyssinian", "beagle")) -> None:
    """accelerate's cv_example: ROOT/images/BREED_I.jpg (the Oxford-IIIT Pet names it reads its
    labels from), and random weights for the timm resnet50d it loads pretrained, where the
    Hugging Face hub's cache keeps them (run with HF_HOME=ROOT/hf HF_HUB_OFFLINE=1)."""
    import timm
    from PIL import Image
    from safetensors.torch import save_file

    os.makedirs(f"{root}/images", exist_ok=True)
    for i in range(n):
        pixels = np.random.randint(0, 256, (240, 240, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(f"{root}/images/{breeds[i % len(breeds)]}_{i}.jpg")
    repo = f"{root}/hf/hub/models--timm--resnet50d.ra2_in1k"
    revision = "0" * 40
    os.makedirs(f"{repo}/snapshots/{revision}", exist_ok=True)
    os.makedirs(f"{repo}/refs", exist_ok=True)
    with open(f"{repo}/refs/main", "w") as f:
        f.write(revision)
    weights = timm.create_model("resnet50d", pretrained=False).state_dict()
    save_file({k: v.contiguous() for k, v in weights.items()},
              f"{repo}/snapshots/{revision}/model.safetensors")


if __name__ == "__main__":
    globals()[sys.argv[1]](sys.argv[2])
