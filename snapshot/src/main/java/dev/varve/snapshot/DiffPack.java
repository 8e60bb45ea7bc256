package dev.varve.snapshot;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The diff pack a {@link Pagelog} is filling, kept apart from its stage: a pack takes its record address only when it
 * is sealed, after every record staged while it filled, so records stay in capture order and their hi grows with the
 * address (what reclamation in temporal order, and the fragmentation measure, rely on) while whole pages captured
 * between its diffs do not cut it short. Its entries are addressed provisionally until then: {@link #PROVISIONAL},
 * the pack's number and the entry's offset; {@link #resolve} turns that into the entry's address once sealed, and an
 * entry whose base lies in the same pack gets the base's address written when the pack is sealed. Guarded by the
 * Pagelog's lock.
 */
final class DiffPack {
    /** Set in a provisional entry address (never stored, never in a location: addresses use bits 0..55). */
    private static final long PROVISIONAL = 1L << 62;
    /** How many sealed packs' addresses are kept for resolving: far more than one archiver batch seals. */
    private static final int SEALED_KEPT = 4096;

    private final int pageSize;
    private final DiffChain chain;
    private final ByteBuffer body;
    private boolean open;
    /** The open pack's number (the last sealed one's when none is open). */
    private long number;
    private long lo;
    private long hi;
    /**
     * The records of the latest sealed packs, pack {@code p} at {@code p % SEALED_KEPT} with its number beside it: a
     * ring, since packs are numbered one after another (a map boxed two longs for every entry the archiver resolved).
     */
    private final long[] sealedNumbers = new long[SEALED_KEPT];
    private final long[] sealedRecords = new long[SEALED_KEPT];

    DiffPack(int pageSize, DiffChain chain) {
        this.pageSize = pageSize;
        this.chain = chain;
        this.body = ByteBuffer.allocateDirect(pageSize).order(ByteOrder.LITTLE_ENDIAN);
        Arrays.fill(sealedNumbers, -1);
    }

    boolean isOpen() {
        return open;
    }

    /** Whether an entry of {@code bytes} fits the open pack. */
    boolean fits(int bytes) {
        return open && used() + bytes <= pageSize;
    }

    private int used() {
        return body.getInt(PagelogDescriptor.PACK_USED_OFFSET);
    }

    /** The widest (lo, hi] of the open pack's entries. */
    long lo() {
        return lo;
    }

    long hi() {
        return hi;
    }

    /**
     * Adds the entry of {@code pageId}'s pre-state (see {@link DiffChain#putEntry}), opening a pack when none is open
     * (the caller checked that it fits); returns its provisional address. {@code base} may be provisional itself.
     */
    long add(long pageId, long lo, long hi, long base, long head, int[] ranges, int n, ByteBuffer image, int imageOffset) {
        if (!open) {
            open = true;
            number++;
            for (int i = 0; i < pageSize; i += Long.BYTES) body.putLong(i, 0);
            body.putInt(PagelogDescriptor.PACK_USED_OFFSET, PagelogDescriptor.PACK_HEADER_SIZE);
            this.lo = Long.MAX_VALUE;
            this.hi = 0;
        }
        if (isProvisional(base) && packOf(base) != number) base = resolve(base); // in an earlier pack: sealed by now
        int offset = used();
        int bytes = chain.putEntry(body, offset, pageId, base, head, ranges, n, image, imageOffset);
        body.putInt(PagelogDescriptor.PACK_COUNT_OFFSET, body.getInt(PagelogDescriptor.PACK_COUNT_OFFSET) + 1)
                .putInt(PagelogDescriptor.PACK_USED_OFFSET, offset + bytes);
        this.lo = Math.min(this.lo, lo);
        this.hi = Math.max(this.hi, hi);
        return PROVISIONAL | number << 16 | (offset >>> 3);
    }

    /**
     * Seals the open pack as record {@code record}, whose segment starts at record {@code segmentStart}: copies its body
     * to {@code dst} at {@code at}, writes the address of every base in the same pack, and checksums each entry. An
     * entry whose chain would end outside the segment is refused: reclaiming that segment would take its head.
     */
    void sealInto(ByteBuffer dst, int at, long record, long segmentStart) {
        dst.put(at, body, 0, pageSize);
        int offset = PagelogDescriptor.PACK_HEADER_SIZE;
        for (int i = body.getInt(PagelogDescriptor.PACK_COUNT_OFFSET); i > 0; i--) {
            long head = dst.getLong(at + offset + PagelogDescriptor.RANGE_ENTRY.head());
            if (head < segmentStart || head >= record)
                throw new IllegalStateException("a diff's chain would end at record " + head + ", outside the segment of its pack, record " + record);
            long base = dst.getLong(at + offset + PagelogDescriptor.RANGE_ENTRY.base());
            if (isProvisional(base)) dst.putLong(at + offset + PagelogDescriptor.RANGE_ENTRY.base(), PagelogDescriptor.entryAddress(record, offsetOf(base)));
            offset += chain.sealEntry(dst, at + offset);
        }
        sealedNumbers[(int) (number % SEALED_KEPT)] = number;
        sealedRecords[(int) (number % SEALED_KEPT)] = record;
        open = false;
    }

    /** Forgets the open pack (recovery cut the volume back). */
    void discard() {
        open = false;
    }

    /** The address an entry's provisional address became when its pack was sealed; any other address as it is. */
    long resolve(long address) {
        if (!isProvisional(address)) return address;
        long pack = packOf(address);
        int at = (int) (pack % SEALED_KEPT);
        if (sealedNumbers[at] != pack) throw new IllegalStateException("diff entry " + Long.toHexString(address) + " is not in a sealed pack");
        return PagelogDescriptor.entryAddress(sealedRecords[at], offsetOf(address));
    }

    static boolean isProvisional(long address) {
        return (address & PROVISIONAL) != 0;
    }

    private static long packOf(long provisional) {
        return (provisional & ~PROVISIONAL) >>> 16;
    }

    private static int offsetOf(long provisional) {
        return (int) (provisional & 0xFFFF) << 3;
    }
}
