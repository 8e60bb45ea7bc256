package dev.varve.core.util;

import java.util.Arrays;

/**
 * Open-addressing map from non-negative long keys (page ids) to long values, without boxing: the page table's
 * stripes and snapshot page tables hold millions of entries. Linear probing; deletion shifts entries back, so no
 * tombstones accumulate. Not thread-safe.
 */
public final class LongLongMap {
    private static final long EMPTY = -1;
    private long[] keys;
    private long[] values;
    private int size;

    /** A map sized for about {@code expected} entries; it grows as needed. */
    public LongLongMap(int expected) {
        int cap = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
        keys = new long[cap];
        values = new long[cap];
        Arrays.fill(keys, EMPTY);
    }

    private static int hash(long k) {
        long h = k * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }

    /** The value of {@code key}, or {@code missing}. */
    public long get(long key, long missing) {
        int mask = keys.length - 1;
        for (int i = hash(key) & mask; ; i = (i + 1) & mask) {
            long k = keys[i];
            if (k == key) return values[i];
            if (k == EMPTY) return missing;
        }
    }

    /** Puts unless present (first-encountered wins); true when it was absent. */
    public boolean putIfAbsent(long key, long value) {
        if (key < 0) throw new IllegalArgumentException("negative key " + key);
        int mask = keys.length - 1;
        int i = hash(key) & mask;
        for (; keys[i] != EMPTY; i = (i + 1) & mask) if (keys[i] == key) return false;
        keys[i] = key;
        values[i] = value;
        if (++size * 2 > keys.length) grow();
        return true;
    }

    /** Replaces the value of a present key; false when absent. */
    public boolean replace(long key, long value) {
        int mask = keys.length - 1;
        for (int i = hash(key) & mask; keys[i] != EMPTY; i = (i + 1) & mask) {
            if (keys[i] == key) {
                values[i] = value;
                return true;
            }
        }
        return false;
    }

    /** Removes {@code key}; backward-shift deletion keeps probe chains whole without tombstones. */
    public boolean remove(long key) {
        int mask = keys.length - 1;
        int i = hash(key) & mask;
        while (keys[i] != key) {
            if (keys[i] == EMPTY) return false;
            i = (i + 1) & mask;
        }
        int hole = i;
        for (int j = (hole + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
            int home = hash(keys[j]) & mask;
            boolean movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
            if (movable) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                hole = j;
            }
        }
        keys[hole] = EMPTY;
        size--;
        return true;
    }

    /** Receives entries. */
    public interface Visitor {
        void visit(long key, long value);
    }

    /** Visits every entry. */
    public void forEach(Visitor visitor) {
        for (int i = 0; i < keys.length; i++) if (keys[i] != EMPTY) visitor.visit(keys[i], values[i]);
    }

    /** Removes every entry, keeping the capacity: for a map refilled over and over. */
    public void clear() {
        Arrays.fill(keys, EMPTY);
        size = 0;
    }

    /** Entries held. */
    public int size() {
        return size;
    }

    private void grow() {
        long[] ok = keys;
        long[] ov = values;
        keys = new long[ok.length * 2];
        values = new long[ok.length * 2];
        Arrays.fill(keys, EMPTY);
        size = 0;
        for (int i = 0; i < ok.length; i++) if (ok[i] != EMPTY) putIfAbsent(ok[i], ov[i]);
    }
}
