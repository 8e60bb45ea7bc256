package dev.varve.engine;

/**
 * Which partition a key belongs to. The hash is part of the on-disk format (a key must land in the same partition
 * after a restart), so it is spelled out here rather than borrowed from a JDK method that might change.
 */
final class KeyHash {
    private KeyHash() {
    }

    /** 32-bit FNV-1a of the key, finished with a murmur3 mix. */
    static int hash(byte[] key) {
        int h = 0x811C9DC5;
        for (byte b : key) {
            h ^= b & 0xFF;
            h *= 0x01000193;
        }
        h ^= h >>> 16;
        h *= 0x85EBCA6B;
        h ^= h >>> 13;
        h *= 0xC2B2AE35;
        h ^= h >>> 16;
        return h;
    }

    static int partition(byte[] key, int partitions) {
        return Math.floorMod(hash(key), partitions);
    }
}
