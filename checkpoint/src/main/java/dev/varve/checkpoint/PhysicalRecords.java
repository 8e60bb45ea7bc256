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
 * PAGE_IMAGE:  pageId (8) | page image (pageSize)
 * PAGE_DELTA:  pageId (8) | ranges (2) | ranges x [ offset (2) | length (2) | bytes (length) ]
 * </pre>
 * A page's first record after a checkpoint mark is always an image, so replay from a mark never needs the page's
 * (possibly torn) on-disk contents.
 */
public final class PhysicalRecords {
    private PhysicalRecords() {
    }

    /** True for the record types this class replays. */
    public static boolean isPhysical(int type) {
        return type == RecordTypes.PAGE_IMAGE || type == RecordTypes.PAGE_DELTA;
    }

    /** Re-applies a physical record to {@code pages} (binary restore). */
    public static void apply(int type, ByteBuffer payload, PageAccess pages) {
        ByteBuffer b = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        long pageId = b.getLong();
        if (type == RecordTypes.PAGE_IMAGE) {
            Page p = pages.acquireNew(pageId);
            try {
                p.putBytes(0, b, b.position(), p.size());
            } finally {
                pages.releaseWrite(p);
            }
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

    /** Encodes an image record of {@code page} into {@code out} (cleared); returns it flipped. */
    static ByteBuffer encodeImage(Page page, ByteBuffer out) {
        out.clear();
        out.putLong(page.getLong(0));
        page.copyTo(out, out.position());
        out.position(out.position() + page.size());
        return out.flip();
    }

    /**
     * Encodes the ranges where {@code page} differs from {@code before} (its image before the change) into
     * {@code out}; returns it flipped, or null when nothing changed. Ranges closer than 16 bytes are merged.
     */
    static ByteBuffer encodeDelta(Page page, ByteBuffer before, ByteBuffer out) {
        out.clear();
        out.putLong(page.getLong(0)).putShort((short) 0);
        int size = page.size();
        int ranges = 0;
        int i = 0;
        ByteBuffer cur = page.buffer();
        int base = page.base();
        ByteBuffer old = before.duplicate().order(ByteOrder.LITTLE_ENDIAN); // same order as Page.getLong
        while (i < size) {
            if (page.getLong(i) == old.getLong(i)) {
                i += 8;
                continue;
            }
            int start = i;
            int end = i + 8;
            int gap = 0;
            for (int j = end; j < size && gap < 16; j += 8) {
                if (page.getLong(j) != old.getLong(j)) {
                    end = j + 8;
                    gap = 0;
                } else {
                    gap += 8;
                }
            }
            out.putShort((short) start).putShort((short) (end - start));
            out.put(out.position(), cur, base + start, end - start);
            out.position(out.position() + end - start);
            ranges++;
            i = end;
        }
        if (ranges == 0) return null;
        out.putShort(8, (short) ranges);
        return out.flip();
    }
}
