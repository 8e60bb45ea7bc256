package dev.varve.core.tree;

import java.util.SplittableRandom;

/**
 * Seeded keys and values for randomized tree tests: a pool of keys mixing short keys over a tiny alphabet (the empty
 * key included), keys sharing a long prefix, maximum-size keys and random ones; values from empty through the
 * inline threshold and overflow sizes up to the 1 MiB maximum.
 */
final class Workload {
    final SplittableRandom random;
    final int pageSize;
    final int maxKey;
    private final byte[][] pool;
    private final byte[] sharedPrefix;
    /** Percent of fresh keys that share the long prefix or have the maximum size. */
    private final int longKeyPercent;

    Workload(long seed, int pageSize, int poolSize) {
        this(seed, pageSize, poolSize, 35);
    }

    Workload(long seed, int pageSize, int poolSize, int longKeyPercent) {
        this.longKeyPercent = longKeyPercent;
        this.random = new SplittableRandom(seed);
        this.pageSize = pageSize;
        this.maxKey = BPlusTree.maxKeyBytes(pageSize);
        this.sharedPrefix = bytes(maxKey);
        this.pool = new byte[poolSize][];
        pool[0] = new byte[0];
        for (int i = 1; i < poolSize; i++) pool[i] = freshKey();
    }

    /** A key from the pool (mostly) or a fresh one. */
    byte[] key() {
        return random.nextInt(10) == 0 ? freshKey() : pool[random.nextInt(pool.length)];
    }

    byte[] freshKey() {
        int kind = random.nextInt(100);
        if (kind < 30) {
            byte[] key = new byte[random.nextInt(13)];
            for (int i = 0; i < key.length; i++) key[i] = (byte) (random.nextInt(4) * 85);
            return key;
        }
        if (kind < 30 + longKeyPercent * 5 / 7) return prefixed(maxKey - 40 + random.nextInt(41), maxKey - 40 - random.nextInt(8));
        if (kind < 30 + longKeyPercent) return prefixed(maxKey, maxKey - 8);
        return bytes(1 + random.nextInt(64));
    }

    /** A key of {@code length} bytes whose first {@code shared} bytes are the workload's shared prefix. */
    private byte[] prefixed(int length, int shared) {
        byte[] key = bytes(length);
        System.arraycopy(sharedPrefix, 0, key, 0, Math.min(shared, length));
        return key;
    }

    byte[] value() {
        int kind = random.nextInt(1000);
        int length;
        if (kind < 100) length = 0;
        else if (kind < 450) length = random.nextInt(41);
        else if (kind < 750) length = 40 + random.nextInt(161);
        else if (kind < 930) length = 200 + random.nextInt(pageSize / 2);
        else if (kind < 999) length = pageSize / 2 + random.nextInt(5 * pageSize);
        else length = BPlusTree.MAX_VALUE_BYTES - random.nextInt(2) * random.nextInt(pageSize);
        return bytes(length);
    }

    byte[] bytes(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; ) {
            long r = random.nextLong();
            for (int j = 0; j < 8 && i < length; j++, r >>>= 8) b[i++] = (byte) r;
        }
        return b;
    }
}
