package dev.varve.checkpoint;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageId;

import dev.varve.core.spi.LoggedValue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The {@code PAGE_REBUILD} record: a page's new contents told as copies of byte ranges of a source page as it was
 * before the change, zero runs and literal bytes. A B+tree split moves about half a page of cells to a new page
 * and repacks the rest: as a delta or an image that is two half pages of bytes the WAL already holds, as copies a
 * few bytes per cell.
 *
 * <pre>
 * PAGE_REBUILD: pageId (8) | sourceId (8) | fresh (1) | ops (2) | ops x [ offset (2) | length (2) | from (2) | bytes ]
 *   from:  an offset in the source page: copy [from, from + length) there to [offset, offset + length);
 *          ZEROS (0xFFFE): zero [offset, offset + length); LITERAL (0xFFFF): {@code length} bytes follow;
 *          LOGGED (0xFFFD): lsn (8) | at (4) follow: copy [at, at + length) of the payload of the WAL record at lsn,
 *          the logical record whose operation this change applies (an inserted value: the WAL has it already).
 *   fresh: 1: the ops apply to a zeroed page (one just allocated); 0: to the page as it was.
 * </pre>
 * The source is the page itself before this change ({@code sourceId = pageId}, never with {@code fresh}), or another
 * page changed by the same operation (a split's full page, for its new right sibling) as it was before: its own record
 * of that change comes later in the WAL, so replay holds it in that state here. The writer takes as a source only a
 * page whose state replay knows: one already logged since the checkpoint mark (a page's first record after a mark
 * is an image). Bytes the record does not name stay as they were (fresh: zero). A LOGGED op's record comes before
 * it in the WAL with no checkpoint mark between them (a write appends its record and applies it under one hold of the
 * checkpoint read lock), so replay from the mark before it finds that record.
 *
 * <p>Not thread-safe: each writer thread keeps its own encoder (the hash table is scratch space).
 */
final class PageRebuild {
    static final int LOGGED = 0xFFFD;
    static final int ZEROS = 0xFFFE;
    static final int LITERAL = 0xFFFF;
    /** Shorter runs of a logged value cost more as a LOGGED op (6 + 12 bytes) and a split literal than as bytes. */
    private static final int MIN_LOGGED = 32;
    /** pageId, sourceId, fresh, op count. */
    static final int HEADER = 8 + 8 + 1 + 2;
    /** Shorter copies or zero runs cost more as ops than their bytes do as part of a literal. */
    private static final int MIN_RUN = 12;
    /**
     * Unchanged bytes that end a literal; fewer are cheaper to carry along than a new op. At most 8, which lets
     * {@link #unchanged} tell a shorter run by one word compare.
     */
    private static final int MIN_SKIP = 8;
    /**
     * Every STRIDE-th source offset is indexed: a run of bytes that moved by any distance passes an indexed source
     * offset within its first STRIDE - 1 bytes, and the match found there is extended back over them. A quarter of the
     * hashing of every offset, for the same ops.
     */
    private static final int STRIDE = 4;

    /** Source offset + 1 of the last indexed 8-byte sequence of each hash (0: none). */
    private final int[] table;
    private final int hashShift;

    PageRebuild(int pageSize) {
        int slots = Integer.highestOneBit(pageSize / STRIDE) * 2;
        this.table = new int[slots];
        this.hashShift = Long.SIZE - Integer.numberOfTrailingZeros(slots);
    }

    /**
     * Encodes {@code page} as ops over {@code base} (its state before the change, LITTLE_ENDIAN like every buffer
     * here; null for a fresh page, whose base is zero) with copies from {@code source} (page {@code sourceId}'s state
     * before the change) into {@code out}; returns it flipped, or null when it would take more than {@code limit}
     * payload bytes.
     */
    ByteBuffer encode(Page page, ByteBuffer base, long sourceId, ByteBuffer source, ByteBuffer out, int limit) {
        int size = page.size();
        index(source, size);
        out.clear();
        out.putLong(page.pageId()).putLong(sourceId).put((byte) (base == null ? 1 : 0)).putShort((short) 0);
        int ops = 0;
        int literal = -1;
        int d = 0;
        while (d < size) {
            int run = unchanged(page, base, d);
            int op = -1;
            if (run < MIN_SKIP) {
                op = ZEROS;
                run = zeros(page, d);
                if (run < MIN_RUN) {
                    op = match(page, source, d);
                    run = op < 0 ? 0 : common(page, d, source, op, size - Math.max(d, op));
                    if (run < MIN_RUN) {
                        if (literal < 0) literal = d;
                        d++;
                        continue;
                    }
                    int back = literal < 0 ? 0 : backwards(page, d, d - literal, source, op);
                    d -= back;
                    op -= back;
                    run += back;
                }
            }
            if (literal >= 0) {
                if (literal < d) ops += literal(out, page, literal, d);
                literal = -1;
            }
            if (op >= 0) {
                ops++;
                putOp(out, d, run, op);
            }
            d += run;
            if (out.position() > limit) return null;
        }
        if (literal >= 0) ops += literal(out, page, literal, size);
        if (out.position() > limit || ops == 0) return null;
        out.putShort(HEADER - 2, (short) ops);
        return out.flip();
    }

    /**
     * Re-encodes {@code delta} (a {@code PAGE_DELTA} payload of {@code page}, whose state before the change is
     * {@code before}) as a rebuild of the page from itself that names two kinds of bytes instead of carrying them:
     * bytes below {@code shiftEnd} that moved up by {@code shift} (down, when negative; 0: none) are copies — a slotted
     * page's slot array after an insert before its end, or a remove; and the run that equals {@code value}, the value
     * the change wrote as its logical record holds it (none when not {@link LoggedValue#active}), is a LOGGED op. Costs
     * no index of the page, so it is cheap enough for every write. Returns the record flipped, or null when it would
     * take more than {@code limit} payload bytes.
     */
    static ByteBuffer fromDelta(ByteBuffer delta, Page page, ByteBuffer before, int shift, int shiftEnd, LoggedValue value,
                                ByteBuffer out, int limit) {
        int size = page.size();
        out.clear();
        out.putLong(page.pageId()).putLong(page.pageId()).put((byte) 0).putShort((short) 0);
        ByteBuffer logged = value.active() && value.length() >= MIN_LOGGED ? littleEndian(value.payload()) : null;
        long head = logged == null ? 0 : logged.getLong(value.offset());
        int ops = 0;
        int at = Long.BYTES;
        int ranges = delta.getShort(at) & 0xFFFF;
        at += 2;
        for (int r = 0; r < ranges; r++) {
            int offset = delta.getShort(at) & 0xFFFF;
            int end = offset + (delta.getShort(at + 2) & 0xFFFF);
            at += 4 + end - offset;
            int literal = offset;
            for (int d = offset; d < end && (logged != null || d < shiftEnd); ) {
                int from = d - shift;
                boolean moved = d < shiftEnd && from >= 0 && from + Long.BYTES <= size && d + Long.BYTES <= size && page.getLong(d) == before.getLong(from);
                int run = moved ? common(page, d, before, from, Math.min(end - d, size - from)) : 0;
                if (run < MIN_RUN) {
                    from = LOGGED;
                    boolean found = logged != null && d + Long.BYTES <= end && page.getLong(d) == head;
                    run = found ? common(page, d, logged, value.offset(), Math.min(end - d, value.length())) : 0;
                    if (run < MIN_LOGGED) {
                        d++;
                        continue;
                    }
                }
                if (literal < d) ops += literal(out, page, literal, d);
                putOp(out, d, run, from);
                if (from == LOGGED) {
                    out.putLong(value.lsn()).putInt(value.offset());
                    logged = null; // a value is written once
                }
                ops++;
                d += run;
                literal = d;
            }
            if (literal < end) ops += literal(out, page, literal, end);
            if (out.position() > limit) return null;
        }
        if (ops == 0) return null;
        out.putShort(HEADER - 2, (short) ops);
        return out.flip();
    }

    private static ByteBuffer littleEndian(ByteBuffer b) {
        return b.order() == ByteOrder.LITTLE_ENDIAN ? b : b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Appends a literal op of {@code page}'s {@code [from, to)}; returns 1, the ops added. */
    private static int literal(ByteBuffer out, Page page, int from, int to) {
        putOp(out, from, to - from, LITERAL);
        out.put(out.position(), page.buffer(), page.base() + from, to - from);
        out.position(out.position() + to - from);
        return 1;
    }

    private static void putOp(ByteBuffer out, int offset, int length, int from) {
        out.putShort((short) offset).putShort((short) length).putShort((short) from);
    }

    private void index(ByteBuffer source, int size) {
        Arrays.fill(table, 0);
        for (int s = 0; s + Long.BYTES <= size; s += STRIDE) table[hash(source.getLong(s))] = s + 1;
    }

    private int hash(long word) {
        return (int) ((word * 0x9E3779B97F4A7C15L) >>> hashShift);
    }

    /**
     * Bytes from {@code d} that equal {@code base} (zero for a fresh page): already right after replay; 0 for a run
     * shorter than {@link #MIN_SKIP}, which the caller does not skip (one word compare tells it, where the full
     * compare would cost two buffer slices at every byte of a literal).
     */
    private static int unchanged(Page page, ByteBuffer base, int d) {
        if (base == null) return zeros(page, d);
        if (d + Long.BYTES <= page.size() && page.getLong(d) != base.getLong(d)) return 0;
        return common(page, d, base, d, page.size() - d);
    }

    private static int zeros(Page page, int d) {
        int n = 0;
        int size = page.size();
        while (d + n + Long.BYTES <= size && page.getLong(d + n) == 0) n += Long.BYTES;
        while (d + n < size && page.getByte(d + n) == 0) n++;
        return n;
    }

    /** A source offset whose 8 bytes equal the page's at {@code d}, or -1. */
    private int match(Page page, ByteBuffer source, int d) {
        if (d + Long.BYTES > page.size()) return -1;
        long word = page.getLong(d);
        int s = table[hash(word)] - 1;
        return s >= 0 && source.getLong(s) == word ? s : -1;
    }

    /**
     * How many of the {@code max} bytes before {@code d} equal the bytes before {@code s} in the source: a match found
     * at an indexed offset, extended back into the literal before it.
     */
    private static int backwards(Page page, int d, int max, ByteBuffer source, int s) {
        int n = 0;
        while (n < max && n < s && page.getByte(d - n - 1) == (source.get(s - n - 1) & 0xFF)) n++;
        return n;
    }

    /** Length of the common run, at most {@code max} bytes, of the page from {@code d} and the source from {@code s}. */
    private static int common(Page page, int d, ByteBuffer source, int s, int max) {
        // the first 64 bytes word by word: most runs end there (a cell, a slot), and the JDK's vectorized compare
        // needs a slice of each buffer, two allocations per call
        int n = 0;
        for (int words = 0; words < 8 && n + Long.BYTES <= max; words++, n += Long.BYTES) {
            if (page.getLong(d + n) != source.getLong(s + n)) break;
        }
        if (n + Long.BYTES > max || page.getLong(d + n) != source.getLong(s + n)) {
            while (n < max && page.getByte(d + n) == (source.get(s + n) & 0xFF)) n++;
            return n;
        }
        int m = page.buffer().slice(page.base() + d + n, max - n).mismatch(source.slice(s + n, max - n));
        return m < 0 ? max : n + m;
    }

    /**
     * Replays a {@code PAGE_REBUILD} record whose pageId was read from {@code b}; LOGGED ops copy from
     * {@code records}.
     *
     * @throws IllegalStateException if an op does not fit the page or its logged record, a fresh page names itself as
     *                               its source, or a logged record is not in the WAL
     */
    static void apply(long pageId, ByteBuffer b, PageAccess pages, LoggedRecords records) {
        long sourceId = b.getLong();
        boolean fresh = b.get() != 0;
        int ops = b.getShort() & 0xFFFF;
        int size = pages.pageSize();
        if (fresh && sourceId == pageId) throw new IllegalStateException("page rebuild of fresh page " + PageId.toString(pageId) + " copies from itself");
        byte[] source = new byte[size];
        if (sourceId != pageId) {
            Page s = pages.acquireRead(sourceId);
            try {
                s.getBytes(0, source, 0, size);
            } finally {
                pages.releaseRead(s);
            }
        }
        Page p = fresh ? pages.acquireNew(pageId) : pages.acquireWrite(pageId);
        try {
            if (sourceId == pageId) p.getBytes(0, source, 0, size); // the ops overwrite what they copy
            for (int i = 0; i < ops; i++) {
                int offset = b.getShort() & 0xFFFF;
                int length = b.getShort() & 0xFFFF;
                int from = b.getShort() & 0xFFFF;
                if (offset + length > size || (from < LOGGED && from + length > size))
                    throw new IllegalStateException("page rebuild op [" + offset + ", " + (offset + length) + ") from " + from + " outside page "
                            + PageId.toString(pageId) + " of " + size + " bytes");
                if (from == LOGGED) {
                    long lsn = b.getLong();
                    int at = b.getInt();
                    ByteBuffer payload = records.payload(lsn);
                    if (at < 0 || at + length > payload.limit())
                        throw new IllegalStateException("page rebuild op [" + offset + ", " + (offset + length) + ") of page " + PageId.toString(pageId) + " copies [" + at + ", "
                                + (at + length) + ") of the " + payload.limit() + "-byte payload of WAL record " + lsn);
                    p.putBytes(offset, payload, at, length);
                } else if (from == LITERAL) {
                    p.putBytes(offset, b, b.position(), length);
                    b.position(b.position() + length);
                } else if (from == ZEROS) {
                    p.zero(offset, length);
                } else {
                    p.putBytes(offset, source, from, length);
                }
            }
        } finally {
            pages.releaseWrite(p);
        }
    }
}
