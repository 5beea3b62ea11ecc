"""The topology in the formats schedulers already read: Slurm, Kueue, Volcano, NCCL."""
