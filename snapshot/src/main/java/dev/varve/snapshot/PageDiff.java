package dev.varve.snapshot;

import java.nio.ByteBuffer;

/**
 * Thresher's byte-range page diff: the runs of bytes where a page differs from a base version of it, and the page
 * rebuilt from the base and those runs. Pure functions over the caller's buffers, so the ranked extent that stores
 * diffs ({@link RankedExtent}) and its tests share one definition.
 *
 * <p>Ranges are (offset, length) pairs in an {@code int[]}: pair i at [2i, 2i + 1], in ascending offset order, never
 * overlapping. The payload of a diff is the page's bytes of each range, back to back in range order.
 */
final class PageDiff {
    /**
     * A gap of fewer than this many equal bytes between two differing runs is copied rather than split at: a range
     * costs 8 bytes of header in an extent record, more than the bytes it would save.
     */
    static final int MIN_GAP = 8;

    private PageDiff() {
    }

    /** Room for the ranges of any diff of a page of {@code pageSize} bytes. */
    static int[] rangesFor(int pageSize) {
        return new int[pageSize + 2];
    }

    /**
     * Fills {@code ranges} with the runs where bytes [0, pageSize) of {@code page} differ from those of {@code base}
     * (positions are absolute in both buffers, which stay unchanged) and returns how many; 0 when they are equal.
     * {@code ranges} must hold {@link #rangesFor} of the page size.
     */
    static int diff(ByteBuffer base, ByteBuffer page, int pageSize, int[] ranges) {
        int n = 0;
        int i = 0;
        while (i < pageSize) {
            int m = page.slice(i, pageSize - i).mismatch(base.slice(i, pageSize - i));
            if (m < 0) break;
            int start = i + m;
            int last = start;
            for (int j = start + 1; j < pageSize && j - last <= MIN_GAP; j++) if (page.get(j) != base.get(j)) last = j;
            ranges[2 * n] = start;
            ranges[2 * n + 1] = last + 1 - start;
            n++;
            i = last + 1;
        }
        return n;
    }

    /**
     * Fills {@code ranges} with the runs of set bits of {@code mask} (bit i is bit i % 64 of long i / 64) as byte
     * ranges, bit i standing for bytes [i * chunkBytes, (i + 1) * chunkBytes), and returns how many.
     */
    static int chunkRuns(long[] mask, int chunkBytes, int[] ranges) {
        int bits = mask.length * Long.SIZE;
        int n = 0;
        for (int first = nextBit(mask, 0, 0L); first < bits; first = nextBit(mask, first, 0L)) {
            int end = nextBit(mask, first, -1L);
            ranges[2 * n] = first * chunkBytes;
            ranges[2 * n + 1] = (end - first) * chunkBytes;
            n++;
            first = end;
        }
        return n;
    }

    /**
     * The first bit at or after {@code from} that is set in {@code mask} ({@code flip} 0) or clear ({@code flip} -1),
     * or the mask's length in bits: a word at a time, without the copy a {@code BitSet} would make of every mask the
     * archiver writes.
     */
    private static int nextBit(long[] mask, int from, long flip) {
        int w = from >>> 6;
        if (w >= mask.length) return mask.length * Long.SIZE;
        long word = (mask[w] ^ flip) & (-1L << from); // the shift counts from % 64
        while (word == 0) {
            if (++w == mask.length) return mask.length * Long.SIZE;
            word = mask[w] ^ flip;
        }
        return w * Long.SIZE + Long.numberOfTrailingZeros(word);
    }

    /** Bytes of payload the first {@code n} ranges carry. */
    static int payloadBytes(int[] ranges, int n) {
        int bytes = 0;
        for (int i = 0; i < n; i++) bytes += ranges[2 * i + 1];
        return bytes;
    }

    /**
     * Copies the payload of the first {@code n} ranges of the page at {@code pageOffset} of {@code page} to index
     * {@code at} of {@code dst}; returns the index after it. Absolute on both sides: neither buffer's position moves.
     */
    static int putPayload(ByteBuffer page, int pageOffset, int[] ranges, int n, ByteBuffer dst, int at) {
        for (int i = 0; i < n; i++) {
            int length = ranges[2 * i + 1];
            dst.put(at, page, pageOffset + ranges[2 * i], length);
            at += length;
        }
        return at;
    }

    /**
     * Turns the base image at {@code pageOffset} of {@code page} into the page: overwrites the first {@code n} ranges
     * with the payload read from {@code payload} at {@code payloadOffset}.
     */
    static void apply(ByteBuffer page, int pageOffset, int[] ranges, int n, ByteBuffer payload, int payloadOffset) {
        int from = payloadOffset;
        for (int i = 0; i < n; i++) {
            int length = ranges[2 * i + 1];
            page.put(pageOffset + ranges[2 * i], payload, from, length);
            from += length;
        }
    }
}
