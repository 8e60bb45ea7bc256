package dev.varve.snapshot;

import java.util.Arrays;

/**
 * A sorted set of snapshot ids as a run of primitive longs: the declarations counted at one rank level. The capture
 * path asks it for a floor once per level on every capture, and declarations append to it, so it is an array searched
 * by bisection rather than a tree of boxed longs (whose floor walks a cache-missing path per capture and whose
 * appends rebalance). Ids arrive in increasing order except a rank raise's, inserted in place; the oldest are
 * forgotten from the front. The rank tree keeps the live snapshots counted at each level in one too, and asks it for
 * a snapshot's position (how many newer ones its level counts). Guarded by the archive's state lock.
 */
final class SortedIds {
    private long[] ids = new long[64];
    /** The ids are ids[from, to). */
    private int from;
    private int to;

    /** Adds {@code id}; a no-op when present. */
    void add(long id) {
        if (to > from && ids[to - 1] >= id) {
            int at = Arrays.binarySearch(ids, from, to, id);
            if (at >= 0) return;
            insertAt(-at - 1, id); // a rank raise of an older snapshot
            return;
        }
        if (to == ids.length) grow();
        ids[to++] = id;
    }

    private void insertAt(int at, long id) {
        if (to == ids.length) {
            int shift = from;
            grow();
            at -= shift;
        }
        System.arraycopy(ids, at, ids, at + 1, to - at);
        ids[at] = id;
        to++;
    }

    /** Makes room at the end: drops the forgotten front, doubling when more than half is in use. */
    private void grow() {
        int n = to - from;
        long[] next = n * 2 > ids.length ? new long[ids.length * 2] : ids;
        System.arraycopy(ids, from, next, 0, n);
        ids = next;
        from = 0;
        to = n;
    }

    /** The largest id not above {@code id}, or 0 when none. */
    long floor(long id) {
        if (to > from && id >= ids[from] && id - ids[from] < to - from && ids[from + (int) (id - ids[from])] == id) return id; // dense ids: no search
        int at = Arrays.binarySearch(ids, from, to, id);
        if (at >= 0) return ids[at];
        int before = -at - 2;
        return before >= from ? ids[before] : 0;
    }

    /** The largest id, 0 when empty. */
    long last() {
        return to > from ? ids[to - 1] : 0;
    }

    int size() {
        return to - from;
    }

    /** The id at position {@code i} (0 is the oldest). */
    long at(int i) {
        return ids[from + i];
    }

    /** The position of {@code id}, or -1 when absent. */
    int indexOf(long id) {
        int at = Arrays.binarySearch(ids, from, to, id);
        return at >= 0 ? at - from : -1;
    }

    /** The position of the first id not below {@code id} ({@link #size} when none). */
    int firstAtLeast(long id) {
        int at = Arrays.binarySearch(ids, from, to, id);
        return (at >= 0 ? at : -at - 1) - from;
    }

    /** Removes {@code id} when present, moving the shorter side: the oldest or the newest go in constant time. */
    void remove(long id) {
        int at = Arrays.binarySearch(ids, from, to, id);
        if (at < 0) return;
        if (at - from < to - at - 1) {
            System.arraycopy(ids, from, ids, from + 1, at - from);
            from++;
        } else {
            System.arraycopy(ids, at + 1, ids, at, to - at - 1);
            to--;
        }
    }

    /** Forgets every id below {@code oldest}. */
    void forgetBelow(long oldest) {
        int at = Arrays.binarySearch(ids, from, to, oldest);
        from = at >= 0 ? at : -at - 1;
    }

    void clear() {
        from = 0;
        to = 0;
    }
}
