package dev.varve.checkpoint;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.spi.RecordTypes;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Payloads of the physical WAL records of {@code WAL_PHYSICAL} mode, and their replay.
 *
 * <pre>
 * PAGE_IMAGE:              pageId (8) | page image (pageSize)
 * PAGE_IMAGE_SKIP_GARBAGE: pageId (8) | start (4) | end (4) | image bytes [0, start) | image bytes [end, pageSize)
 * PAGE_IMAGE_SNAPPY:       pageId (8) | snappy-java's compression of a PAGE_IMAGE_SKIP_GARBAGE body (start | end | bytes)
 * PAGE_DELTA:              pageId (8) | ranges (2) | ranges x [ offset (2) | length (2) | bytes (length) ]
 * PAGE_REBUILD:            see {@link PageRebuild}
 * </pre>
 * {@code PAGE_IMAGE_SKIP_GARBAGE} leaves out the page's unused middle [start, end) (the gap between a slotted page's
 * slot array and its cells, an overflow page's tail...), which the page layout keeps zero: replay restores it as
 * zeros, so the page comes back byte for byte and its checksum, computed over the whole page when it is written
 * to its file, is the same. Its body is {@link PageCodec#SKIP_GARBAGE}'s encoding. Which image type is written follows
 * {@code recoveryCompression}, as for the recovery file's entries: {@code DISABLED} the whole page, {@code SKIP_GARBAGE}
 * without the middle, {@code SNAPPY} without the middle and compressed when that is smaller. A page's first record after a
 * checkpoint mark is always an image (or, for a page just allocated, a rebuild from a page replay already knows), so
 * replay from a mark never needs the page's (possibly torn) on-disk contents.
 */
public final class PhysicalRecords {
    /** pageId, then SKIP_GARBAGE's start and end. */
    private static final int SKIP_GARBAGE_HEADER = Long.BYTES + 8;

    private PhysicalRecords() {
    }

    /** True for the record types this class replays. */
    public static boolean isPhysical(int type) {
        return isImage(type) || type == RecordTypes.PAGE_DELTA || type == RecordTypes.PAGE_REBUILD;
    }

    /** True for the record types that restore a whole page. */
    public static boolean isImage(int type) {
        return type == RecordTypes.PAGE_IMAGE || type == RecordTypes.PAGE_IMAGE_SKIP_GARBAGE || type == RecordTypes.PAGE_IMAGE_SNAPPY;
    }

    /** Direct scratch for replay's uncompressed images, since a payload may be a heap buffer (a shipped record). */
    private static final ThreadLocal<ByteBuffer[]> UNCOMPRESSED = ThreadLocal.withInitial(() -> new ByteBuffer[2]);

    /**
     * Re-applies a physical record to {@code pages} (binary restore); a rebuild's LOGGED ops copy from the
     * {@code records} they name.
     *
     * @throws IllegalStateException if the record's ranges do not fit the page, or a record it names is missing
     */
    public static void apply(int type, ByteBuffer payload, PageAccess pages, LoggedRecords records) {
        ByteBuffer b = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        long pageId = b.getLong();
        if (type == RecordTypes.PAGE_IMAGE_SNAPPY) {
            type = RecordTypes.PAGE_IMAGE_SKIP_GARBAGE;
            b = uncompressed(b, pages.pageSize());
        }
        if (isImage(type)) {
            Page p = pages.acquireNew(pageId); // zeroed: a left-out middle comes back as zeros
            try {
                int size = p.size();
                if (type == RecordTypes.PAGE_IMAGE) {
                    if (b.remaining() != size) throw new IllegalStateException("page image of " + b.remaining() + " bytes for a page of " + size);
                    p.putBytes(0, b, b.position(), size);
                    return;
                }
                int start = b.getInt();
                int end = b.getInt();
                if (start < 0 || start > end || end > size || b.remaining() != start + (size - end))
                    throw new IllegalStateException("page image without [" + start + ", " + end + ") does not fit its " + b.remaining()
                            + " bytes and a page of " + size);
                p.putBytes(0, b, b.position(), start);
                p.putBytes(end, b, b.position() + start, size - end);
            } finally {
                pages.releaseWrite(p);
            }
            return;
        }
        if (type == RecordTypes.PAGE_REBUILD) {
            PageRebuild.apply(pageId, b, pages, records);
            return;
        }
        Page p = pages.acquireWrite(pageId);
        try {
            int ranges = b.getShort() & 0xFFFF;
            for (int i = 0; i < ranges; i++) {
                int off = b.getShort() & 0xFFFF;
                int len = b.getShort() & 0xFFFF;
                if (off + len > p.size()) throw new IllegalStateException("page delta range [" + off + ", " + (off + len) + ") outside the page");
                p.putBytes(off, b, b.position(), len);
                b.position(b.position() + len);
            }
        } finally {
            pages.releaseWrite(p);
        }
    }

    /**
     * A compressed image's uncompressed body (a {@code PAGE_IMAGE_SKIP_GARBAGE} payload after its pageId) in a
     * thread-local direct buffer, positioned at 0, the pageId's 8 bytes before it left as they are.
     */
    private static ByteBuffer uncompressed(ByteBuffer b, int pageSize) {
        ByteBuffer[] scratch = UNCOMPRESSED.get();
        if (scratch[0] == null || scratch[0].capacity() < SKIP_GARBAGE_HEADER + pageSize) {
            scratch[0] = ByteBuffer.allocateDirect(SKIP_GARBAGE_HEADER + pageSize).order(ByteOrder.LITTLE_ENDIAN);
            scratch[1] = null;
        }
        ByteBuffer in = b;
        int from = b.position();
        if (!b.isDirect()) {
            if (scratch[1] == null || scratch[1].capacity() < b.remaining()) scratch[1] = ByteBuffer.allocateDirect(Math.max(b.remaining(), 2 * pageSize));
            scratch[1].put(0, b, from, b.remaining());
            in = scratch[1];
            from = 0;
        }
        try {
            int n = PageCodec.uncompress(in, from, b.remaining(), scratch[0], -1);
            return scratch[0].duplicate().order(ByteOrder.LITTLE_ENDIAN).limit(n).position(0);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("compressed page image: " + e.getMessage(), e);
        }
    }

    /** The payload bytes of {@code page}'s image record, {@code unusedRange} left out, before any compression. */
    static int imageBytes(Page page, long unusedRange) {
        int unused = (int) unusedRange - (int) (unusedRange >>> 32);
        return unusedRange == 0 ? Long.BYTES + page.size() : SKIP_GARBAGE_HEADER + page.size() - unused;
    }

    /**
     * Encodes an image record of {@code page} into {@code out} (cleared, then flipped) as {@code codec} says, leaving
     * out {@code unusedRange} ({@code start<<32|end} as {@code PageLayout.unusedRange} gives it, 0 for none; its bytes
     * must be zero) unless the codec is {@code DISABLED}; returns the record's type. {@code SNAPPY} encodes the body in
     * {@code scratch} (direct, a page and 8 bytes at least) and compresses it into {@code out}, keeping it uncompressed
     * when compression saves less than a sixteenth.
     */
    static int encodeImage(Page page, long unusedRange, PageCodec codec, ByteBuffer out, ByteBuffer scratch) {
        out.clear();
        out.putLong(page.getLong(0));
        if (unusedRange == 0 || codec == PageCodec.DISABLED) {
            if (codec != PageCodec.SNAPPY) {
                page.copyTo(out, out.position());
                out.position(out.position() + page.size());
                out.flip();
                return RecordTypes.PAGE_IMAGE;
            }
            unusedRange = 0;
        }
        assert unusedRange == 0 || isZero(page, (int) (unusedRange >>> 32), (int) unusedRange) : "unused range of page " + page.pageId() + " holds data";
        if (codec == PageCodec.SKIP_GARBAGE) {
            out.position(out.position() + PageCodec.encodeSkipGarbage(page, unusedRange, out, out.position()));
            out.flip();
            return RecordTypes.PAGE_IMAGE_SKIP_GARBAGE;
        }
        int body = PageCodec.encodeSkipGarbage(page, unusedRange, scratch.clear(), 0);
        int compressed = PageCodec.compress(scratch, 0, body, out, Long.BYTES);
        if (compressed <= body - body / 16) { // else replay would pay to uncompress for next to nothing
            out.limit(Long.BYTES + compressed).position(0);
            return RecordTypes.PAGE_IMAGE_SNAPPY;
        }
        out.put(Long.BYTES, scratch, 0, body);
        out.limit(Long.BYTES + body).position(0);
        return RecordTypes.PAGE_IMAGE_SKIP_GARBAGE;
    }

    private static boolean isZero(Page page, int from, int to) {
        for (int i = from; i < to; i++) if (page.getByte(i) != 0) return false;
        return true;
    }

    /**
     * Encodes the ranges where {@code page} differs from {@code before} (its image before the change) into
     * {@code out}; returns it flipped, or null when nothing changed. Ranges closer than 16 bytes are merged; each
     * starts and ends at a changed byte. The equal runs are found with the JDK's vectorized compare between
     * {@code pageView}, a view of {@code page.buffer()} that only the calling thread moves, and {@code before}, the
     * thread's own little-endian buffer (as {@link Page#getLong} reads; left cleared): their positions and limits are
     * moved instead of slicing both buffers for every run, which allocated most of what a put did under WAL_PHYSICAL
     * whenever the JIT compiler kept the slices on the heap (1.2-1.8 KB a put in such runs).
     */
    static ByteBuffer encodeDelta(Page page, ByteBuffer pageView, ByteBuffer before, ByteBuffer out) {
        if (before.order() != ByteOrder.LITTLE_ENDIAN) throw new IllegalArgumentException("a page's before-image must be little-endian, as the page is read");
        out.clear();
        out.putLong(page.getLong(0)).putShort((short) 0);
        int size = page.size();
        int ranges = 0;
        int i = 0;
        ByteBuffer cur = page.buffer();
        int base = page.base();
        pageView.clear().limit(base + size);
        before.clear().limit(size);
        while (i < size) {
            int m = pageView.position(base + i).mismatch(before.position(i));
            if (m < 0) break; // the rest is equal
            int start = i + m;
            int end = (start & ~7) + 8;
            int gap = 0;
            for (int j = end; j < size && gap < 16; j += 8) {
                if (page.getLong(j) != before.getLong(j)) {
                    end = j + 8;
                    gap = 0;
                } else {
                    gap += 8;
                }
            }
            i = end;
            // the last word differs somewhere inside: leave out its equal bytes
            while (page.getByte(end - 1) == (before.get(end - 1) & 0xFF)) end--;
            out.putShort((short) start).putShort((short) (end - start));
            out.put(out.position(), cur, base + start, end - start);
            out.position(out.position() + end - start);
            ranges++;
        }
        before.clear();
        if (ranges == 0) return null;
        out.putShort(8, (short) ranges);
        return out.flip();
    }
}
