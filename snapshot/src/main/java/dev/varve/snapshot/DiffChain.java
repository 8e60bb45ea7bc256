package dev.varve.snapshot;

import dev.varve.config.ConfigLimits;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.page.Page;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.zip.CRC32C;

/**
 * Diff capture's entries and chains (Thresher's diffs, taken at capture time): a pre-state stored as byte ranges, the
 * runs of the page's chunks that changed since its previous archived version — the base — which may itself be a
 * diff, back to a whole page (the head). Chains are bounded ({@code snapshotDiffChain}) and every {@link PendingCaptures#SKIP}th
 * version's base lies that many versions back (a skip link), so a read costs at most {@code SKIP - 1} entry reads plus
 * one per {@code SKIP} versions of the chain, and one record read. The entry layout is {@link PagelogDescriptor}'s;
 * entries live in a {@link Pagelog}'s packs.
 *
 * <p>Why it is safe: the chunks come from the page's own change tracking ({@link Page#takeChanged}), and each entry
 * carries the CRC32C of the whole page it rebuilds, checked after the chain is applied — a change tracking ever
 * missed, or damage anywhere on the chain, is reported as corruption, never served.
 *
 * <p>Pages it rebuilt are kept ({@link #REBUILT}, by the entry's address), because a rebuild costs a read per link
 * where a whole page costs one: a page read again is served from there, and a chain walked back to a version kept
 * there starts from it instead of its head. A kept page was checked whole when it was rebuilt, and entries never
 * change once written, so it serves until recovery cuts the volume ({@link #forget}); the Pagelog's reader
 * ({@link PagelogReader}) checks that the address's segment is still held before it asks (I8).
 */
final class DiffChain {
    /**
     * About 16 MiB of 4 KiB pages, allocated at the first rebuild: the leaves and inner pages of a past tree of some
     * 100,000 small entries. Measured (20,000 random as-of gets of an old snapshot after one pass, snapshot after every
     * batch): p50 8.8 µs with none kept, against 1.4 µs for the same snapshot archived as whole pages.
     */
    static final int REBUILT = 4096;
    /**
     * Bytes of an entry's record a link reads first: an entry for a put of 100 bytes takes about 160, so most are read
     * whole by it (one copy out of a kept record), and a longer one is read again at its size.
     */
    private static final int FIRST_READ = 512;
    /** The layout of the entries this class writes. */
    private static final PagelogDescriptor.EntryLayout CURRENT = PagelogDescriptor.RANGE_ENTRY;
    private final int pageSize;
    /** A version 3 entry's chunk: its mask has 64. */
    private final int maskChunkBytes;
    private final CRC32C crc = new CRC32C();
    private final ArchivedPageCache rebuilt;
    /** A view of the buffer {@link #putEntry} last took an image from, kept so its CRC needs no new buffer per entry. */
    private ByteBuffer imageView;
    private ByteBuffer imageViewOf;

    DiffChain(int pageSize) {
        this.pageSize = pageSize;
        this.maskChunkBytes = pageSize / PagelogDescriptor.MASK_ENTRY_CHUNKS;
        this.rebuilt = new ArchivedPageCache(REBUILT, pageSize);
    }

    /**
     * Writes the entry of {@code pageId}'s pre-state (the page at {@code imageOffset} of {@code image}) at {@code at} of
     * {@code dst}: its fields, the first {@code n} of {@code ranges} and their bytes, and the rebuilt page's CRC; its
     * own CRC is set when its pack is sealed ({@link #sealEntry}). Returns its size. Caller holds the Pagelog's lock
     * (the CRC instance is shared).
     */
    int putEntry(ByteBuffer dst, int at, long pageId, long base, long head, int[] ranges, int n, ByteBuffer image, int imageOffset) {
        int payload = PageDiff.payloadBytes(ranges, n);
        int bytes = PagelogDescriptor.rangeEntryBytes(n, payload);
        dst.putLong(at + PagelogDescriptor.ENTRY_PAGE_ID_OFFSET, pageId).putLong(at + CURRENT.base(), base).putLong(at + CURRENT.head(), head)
                .putShort(at + PagelogDescriptor.ENTRY_RANGES_OFFSET, (short) n).putShort(at + PagelogDescriptor.ENTRY_PAYLOAD_OFFSET, (short) payload);
        int to = at + CURRENT.headerSize();
        for (int i = 0; i < n; i++, to += PagelogDescriptor.RANGE_ENTRY_BYTES)
            dst.putShort(to, (short) ranges[2 * i]).putShort(to + Short.BYTES, (short) ranges[2 * i + 1]);
        PageDiff.putPayload(image, imageOffset, ranges, n, dst, to);
        crc.reset();
        crc.update(window(image, imageOffset));
        dst.putInt(at + CURRENT.pageCrc(), (int) crc.getValue());
        return bytes;
    }

    /** The page at {@code offset} of {@code image}, between the position and limit of a kept view. Caller holds the Pagelog's lock. */
    private ByteBuffer window(ByteBuffer image, int offset) {
        if (imageViewOf != image) {
            imageView = image.duplicate();
            imageViewOf = image;
        }
        return imageView.clear().position(offset).limit(offset + pageSize);
    }

    /** Sets the CRC of the entry at {@code at} of {@code buf} (of the current format), whose fields are final; returns its size. */
    int sealEntry(ByteBuffer buf, int at) {
        int bytes = PagelogDescriptor.entryBytes(buf, at, PagelogDescriptor.VERSION, maskChunkBytes);
        buf.putInt(at + CURRENT.crc(), PagelogDescriptor.entryCrc(buf, at, bytes, CURRENT, crc));
        return bytes;
    }

    /**
     * Reads the pre-state at {@code address} of {@code volume} into {@code dst}: a whole record's image, or the chain
     * of entries from it back to its head — or to the newest version on the way that was {@linkplain #REBUILT kept} —
     * applied oldest first to that image and then checked whole. The caller has checked that the address's segment is
     * held; a chain never leaves its segment.
     */
    void read(Pagelog volume, long address, long pageId, ByteBuffer dst, int dstOffset) {
        if (PagelogDescriptor.entryOffsetOf(address) == 0) {
            volume.reader.readWhole(address, pageId, dst, dstOffset);
            return;
        }
        int version = volume.versionOf(PagelogDescriptor.recordOf(address)); // of every link: a chain never leaves its segment
        PagelogDescriptor.EntryLayout layout = PagelogDescriptor.entryLayout(version);
        ArrayDeque<ByteBuffer> links = new ArrayDeque<>();
        long at = address;
        boolean kept = false;
        while (PagelogDescriptor.entryOffsetOf(at) != 0 && !(kept = rebuilt.copyOut(at, dst, dstOffset))) {
            if (links.size() > ConfigLimits.SNAPSHOT_DIFF_CHAIN_MAX)
                throw new CorruptionException("the diff chain of page " + pageId + " is longer than any chain written", volume.pathOf(address), 0);
            ByteBuffer entry = readEntry(volume, at, pageId, version);
            links.push(entry);
            at = entry.getLong(layout.base());
        }
        if (links.isEmpty()) return; // the page asked for was kept
        if (!kept) volume.reader.readWhole(at, pageId, dst, dstOffset);
        int expected = links.peekLast().getInt(layout.pageCrc()); // the newest link's: the page asked for
        while (!links.isEmpty()) apply(links.pop(), version, dst, dstOffset);
        CRC32C check = new CRC32C();
        check.update(dst.slice(dstOffset, pageSize));
        if ((int) check.getValue() != expected)
            throw new CorruptionException("the pre-state of page " + pageId + " rebuilt from its diff chain fails its checksum", volume.pathOf(address), 0);
        rebuilt.put(address, dst, dstOffset);
    }

    /** Forgets every rebuilt page: the volume was cut, and the addresses after the cut will name new entries. */
    void forget() {
        rebuilt.clear();
    }

    /**
     * Reads the diff entry at {@code address} of {@code volume} (its bytes, not its record: {@link #FIRST_READ} of
     * them, and a longer one again whole) and checks its CRC, that it is {@code pageId}'s and that its base lies
     * before it (so a chain always ends); returns it, limited to its bytes. {@code version}: the format of its segment.
     */
    ByteBuffer readEntry(Pagelog volume, long address, long pageId, int version) {
        int offset = PagelogDescriptor.entryOffsetOf(address);
        PagelogDescriptor.EntryLayout layout = PagelogDescriptor.entryLayout(version);
        ByteBuffer e = ByteBuffer.allocate(Math.min(pageSize - offset, FIRST_READ)).order(ByteOrder.LITTLE_ENDIAN);
        long off = volume.reader.readEntryBytes(address, e);
        int bytes = PagelogDescriptor.entryBytes(e, 0, version, maskChunkBytes);
        if (offset + bytes > pageSize) throw new CorruptionException("Pagelog diff entry runs past its record (page " + pageId + ")", volume.pathOf(address), off);
        if (bytes > e.capacity()) {
            e = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
            volume.reader.readEntryBytes(address, e);
        }
        e.limit(bytes);
        if (e.getInt(layout.crc()) != PagelogDescriptor.entryCrc(e, 0, bytes, layout, new CRC32C()))
            throw new CorruptionException("Pagelog diff entry checksum mismatch (page " + pageId + ")", volume.pathOf(address), off);
        if (version > PagelogDescriptor.MASK_ENTRY_VERSION && !rangesFit(e))
            throw new CorruptionException("Pagelog diff entry of page " + pageId + " has ranges outside its page or payload", volume.pathOf(address), off);
        long found = e.getLong(PagelogDescriptor.ENTRY_PAGE_ID_OFFSET);
        if (found != pageId) throw new CorruptionException("Pagelog diff entry holds page " + found + ", expected " + pageId, volume.pathOf(address), off);
        long base = e.getLong(layout.base());
        long record = PagelogDescriptor.recordOf(address);
        long baseRecord = PagelogDescriptor.recordOf(base);
        if (base < 0 || baseRecord > record || (baseRecord == record && PagelogDescriptor.entryOffsetOf(base) >= offset))
            throw new CorruptionException("Pagelog diff entry of page " + pageId + " has base " + base + ", not before it", volume.pathOf(address), off);
        return e;
    }

    /**
     * Whether the ranges of a checksummed entry are ascending, inside the page, and carry its payload: the CRC stops
     * damage, this stops a writer's bug from reaching past the page being rebuilt.
     */
    private boolean rangesFit(ByteBuffer e) {
        int[] ranges = ranges(e);
        int end = 0;
        for (int i = 0; i < ranges.length; i += 2) {
            if (ranges[i] < end || ranges[i] + ranges[i + 1] > pageSize) return false;
            end = ranges[i] + ranges[i + 1];
        }
        return PageDiff.payloadBytes(ranges, ranges.length / 2) == Short.toUnsignedInt(e.getShort(PagelogDescriptor.ENTRY_PAYLOAD_OFFSET));
    }

    /** The ranges of a version 4 entry, as {@link PageDiff} holds them: (offset, length) at [2i, 2i + 1]. */
    private static int[] ranges(ByteBuffer e) {
        int[] ranges = new int[2 * Short.toUnsignedInt(e.getShort(PagelogDescriptor.ENTRY_RANGES_OFFSET))];
        for (int i = 0; i < ranges.length; i++) ranges[i] = Short.toUnsignedInt(e.getShort(CURRENT.headerSize() + i * Short.BYTES));
        return ranges;
    }

    /**
     * Overwrites what {@code entry} (of a segment of {@code version}) carries in the page at {@code dstOffset} of
     * {@code dst}: the chunks of its mask (version 3) or its ranges, which {@link #readEntry} checked.
     */
    private void apply(ByteBuffer entry, int version, ByteBuffer dst, int dstOffset) {
        int from = PagelogDescriptor.entryLayout(version).headerSize();
        if (version <= PagelogDescriptor.MASK_ENTRY_VERSION) {
            for (long m = entry.getLong(PagelogDescriptor.ENTRY_CHANGED_OFFSET); m != 0; m &= m - 1) {
                dst.put(dstOffset + Long.numberOfTrailingZeros(m) * maskChunkBytes, entry, from, maskChunkBytes);
                from += maskChunkBytes;
            }
            return;
        }
        int[] ranges = ranges(entry);
        PageDiff.apply(dst, dstOffset, ranges, ranges.length / 2, entry, from + ranges.length / 2 * PagelogDescriptor.RANGE_ENTRY_BYTES);
    }
}
