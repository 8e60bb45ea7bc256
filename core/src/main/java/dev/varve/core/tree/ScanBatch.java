package dev.varve.core.tree;

import java.util.Arrays;

/**
 * One batch of a range scan: up to the requested number of entries in key order, copied out of the pages, plus
 * whether the range holds more. A scan holds no page between batches; the next batch starts after {@link #lastKey()}
 * ({@code fromInclusive = false}) and sees whatever writes happened in between.
 */
public final class ScanBatch {
    private static final byte[][] NONE = new byte[0][];
    private final byte[][] keys;
    private final byte[][] values;
    private final int size;
    private final boolean hasMore;

    ScanBatch(byte[][] keys, byte[][] values, int size, boolean hasMore) {
        this.keys = keys;
        this.values = values;
        this.size = size;
        this.hasMore = hasMore;
    }

    /** An empty batch of a finished range. */
    static ScanBatch empty() {
        return new ScanBatch(NONE, NONE, 0, false);
    }

    /** Number of entries in this batch. */
    public int size() {
        return size;
    }

    /** True when the batch is empty. */
    public boolean isEmpty() {
        return size == 0;
    }

    /** Key of entry {@code i} (0 &lt;= i &lt; size), in ascending order. */
    public byte[] key(int i) {
        return keys[checkIndex(i)];
    }

    /** Value of entry {@code i} (0 &lt;= i &lt; size). */
    public byte[] value(int i) {
        return values[checkIndex(i)];
    }

    /** The last key of the batch, where the next batch resumes; null when the batch is empty. */
    public byte[] lastKey() {
        return size == 0 ? null : keys[size - 1];
    }

    /** True when the range held more entries than this batch took; false when the scan reached its end. */
    public boolean hasMore() {
        return hasMore;
    }

    private int checkIndex(int i) {
        if (i < 0 || i >= size) throw new IndexOutOfBoundsException("entry " + i + " of a batch of " + size);
        return i;
    }

    @Override
    public String toString() {
        return "ScanBatch[size=" + size + ", hasMore=" + hasMore + ", lastKey="
                + (size == 0 ? "none" : Arrays.toString(keys[size - 1])) + "]";
    }
}
