package dev.varve.benchmarks;

/** Benchmark keys: a {@code long} as 8 big-endian bytes, so unsigned byte order is numeric order for non-negative ids. */
final class Keys {
    /** Bytes in a key. */
    static final int KEY_BYTES = Long.BYTES;

    private Keys() {
    }

    static byte[] of(long id) {
        byte[] k = new byte[KEY_BYTES];
        for (int i = KEY_BYTES - 1; i >= 0; i--) {
            k[i] = (byte) id;
            id >>>= 8;
        }
        return k;
    }

    static long idOf(byte[] key) {
        if (key.length != KEY_BYTES) throw new IllegalArgumentException("not a benchmark key: " + key.length + " bytes");
        long id = 0;
        for (byte b : key) id = (id << 8) | (b & 0xFF);
        return id;
    }
}
