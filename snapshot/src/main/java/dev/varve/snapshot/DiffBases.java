package dev.varve.snapshot;

import dev.varve.core.page.Page;
import dev.varve.core.util.LongLongMap;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The image of the version each page was last archived as in one Pagelog volume, by page: the base its next diff is
 * taken against, so that diff carries the bytes that differ inside the chunks the page's writes touched rather than
 * those whole chunks. A page is captured again after a snapshot, so its previous version is usually still here: a
 * put of a 100-byte value touches three or four 64-byte chunks but changes about a hundred bytes. Only the touched
 * chunks of a kept image are read (they are cold: a volume keeps many pages), and only the bytes that changed are
 * written to it.
 *
 * <p>An image is kept under the address its version was archived at (provisional while its pack is open, moved to
 * the sealed address by {@link #sealed}), and used only for a diff whose base is that very address: a base of any
 * other version, or a page pushed out, is a miss, and the caller falls back to the marked chunks. Off-heap, allocated
 * at the first diff (a volume that never stores diffs pays nothing), with clock replacement. Guarded by the Pagelog's
 * lock.
 */
final class DiffBases {
    /** 16 MiB of 4 KiB pages: the hot leaves of some 100,000 small entries. */
    static final int PAGES = 4096;

    private final int pageSize;
    private final int pages;
    private final int[] chunkRuns = new int[2 * Page.CHUNKS];
    private ByteBuffer imageSeen;
    private ByteBuffer imageView;
    private ByteBuffer images;
    private long[] pageIds;
    private long[] addresses;
    private boolean[] referenced;
    /** Page id → slot. */
    private LongLongMap index;
    private int hand;
    private int used;

    DiffBases(int pages, int pageSize) {
        this.pages = pages;
        this.pageSize = pageSize;
    }

    /**
     * Fills {@code ranges} with the diff of the page at {@code offset} of {@code image} against the kept image of
     * {@code pageId}'s version at {@code base} inside the chunks of {@code changed} — what its writes touched since
     * that version, so only those chunks of the kept image are read — and returns how many; -1 when that version is
     * not kept. A change outside them is left out, as the chunks' entry would leave it: the rebuilt page's CRC tells.
     */
    int diff(long pageId, long base, long changed, ByteBuffer image, int offset, int[] ranges) {
        int slot = slotOf(pageId);
        if (slot < 0 || addresses[slot] != base) return -1;
        referenced[slot] = true;
        if (image != imageSeen) { // the capture buffer, every time: one view of it
            imageSeen = image;
            imageView = PageDiff.littleEndian(image);
        }
        int runs = PageDiff.chunkRuns(changed, pageSize / Page.CHUNKS, chunkRuns);
        int n = 0;
        for (int r = 0; r < runs; r++)
            n = PageDiff.diffWithin(images, slot * pageSize, imageView, offset, chunkRuns[2 * r], chunkRuns[2 * r] + chunkRuns[2 * r + 1], pageSize, ranges, n);
        return n;
    }

    /** Whether any image is kept: whole pages archived before a volume's first diff are not worth the copy. */
    boolean inUse() {
        return index != null;
    }

    /** Keeps the page at {@code offset} of {@code image} as {@code pageId}'s version at {@code address}, in place of any kept before. */
    void keep(long pageId, long address, ByteBuffer image, int offset) {
        if (index == null) {
            images = ByteBuffer.allocateDirect(pages * pageSize).order(ByteOrder.LITTLE_ENDIAN);
            pageIds = new long[pages];
            addresses = new long[pages];
            referenced = new boolean[pages];
            index = new LongLongMap(pages);
        }
        int slot = slotOf(pageId);
        if (slot < 0) {
            slot = freeSlot();
            pageIds[slot] = pageId;
            index.putIfAbsent(pageId, slot);
        }
        images.put(slot * pageSize, image, offset, pageSize);
        addresses[slot] = address;
        referenced[slot] = true;
    }

    /**
     * Makes {@code pageId}'s kept image, the base {@link #diff} just matched, its version at {@code address}: the page
     * at {@code offset} of {@code image}, which differs from it in the first {@code n} of {@code ranges} only.
     */
    void advance(long pageId, long address, ByteBuffer image, int offset, int[] ranges, int n) {
        int slot = slotOf(pageId);
        for (int i = 0; i < n; i++) images.put(slot * pageSize + ranges[2 * i], image, offset + ranges[2 * i], ranges[2 * i + 1]);
        addresses[slot] = address;
    }

    /** The entry of {@code pageId} kept at provisional address {@code provisional} was sealed at {@code address}. */
    void sealed(long pageId, long provisional, long address) {
        int slot = slotOf(pageId);
        if (slot >= 0 && addresses[slot] == provisional) addresses[slot] = address;
    }

    /** Forgets every image and gives the memory back (recovery cut the volume: addresses will name new versions). */
    void clear() {
        images = null;
        pageIds = null;
        addresses = null;
        referenced = null;
        index = null;
        imageSeen = null;
        imageView = null;
        hand = 0;
        used = 0;
    }

    private int slotOf(long pageId) {
        return index == null ? -1 : (int) index.get(pageId, -1);
    }

    private int freeSlot() {
        if (used < pages) return used++;
        while (referenced[hand]) {
            referenced[hand] = false;
            hand = (hand + 1) % pages;
        }
        int slot = hand;
        hand = (hand + 1) % pages;
        index.remove(pageIds[slot]);
        return slot;
    }
}
