package dev.varve.core.memory;

import dev.varve.core.page.Page;
import org.jctools.queues.atomic.MpmcAtomicArrayQueue;

import java.nio.ByteBuffer;

/**
 * A bounded off-heap pool of page-sized slots: the checkpoint buffer (copy-on-write images of pages the running
 * checkpoint has not written yet) and the snapshot capture buffer (pre-states on their way to the archive). Slots
 * are handed out and returned through a JCTools MPMC queue: writers take, checkpoint threads or the archiver give
 * back.
 */
public final class PageSlots {
    /**
     * The slots' memory, {@link RegionChunks#framesPerChunk} slots to a buffer: one buffer's capacity is an int, and the
     * settings allow up to 64 GiB (one buffer cut them to under 2 GiB in silence).
     */
    private final ByteBuffer[] chunks;
    private final int slotsPerChunk;
    private final int pageSize;
    private final int capacity;
    private final MpmcAtomicArrayQueue<Integer> freeSlots;
    /** Slot numbers boxed once, so handing slots around allocates nothing. */
    private final Integer[] boxes;

    /** A pool of {@code bytes / pageSize} slots; {@code setting} names the configuration that sized it, for errors. */
    public PageSlots(long bytes, int pageSize, String setting) {
        this.pageSize = pageSize;
        long slots = bytes / pageSize;
        // the slot numbers are ints, and the free list and its boxes arrays
        if (slots > Integer.MAX_VALUE - 8) throw new IllegalArgumentException(setting + " of " + bytes + " bytes holds too many pages");
        this.capacity = (int) slots;
        this.slotsPerChunk = RegionChunks.framesPerChunk(pageSize);
        try {
            this.chunks = RegionChunks.allocate(capacity, pageSize);
        } catch (OutOfMemoryError e) {
            throw cannotAllocate(setting, bytes, e);
        }
        this.freeSlots = new MpmcAtomicArrayQueue<>(Math.max(2, capacity));
        this.boxes = new Integer[capacity];
        for (int i = 0; i < capacity; i++) {
            boxes[i] = i;
            freeSlots.offer(boxes[i]);
        }
    }

    /**
     * The error for memory of {@code bytes} that setting {@code setting} asked for and the JVM could not give: named,
     * so the operator knows which setting (or which JVM limit) to change, rather than an {@code OutOfMemoryError}.
     */
    public static IllegalArgumentException cannotAllocate(String setting, long bytes, OutOfMemoryError e) {
        return new IllegalArgumentException(setting + " of " + bytes + " bytes cannot be allocated (" + e.getMessage()
                + "); lower " + setting + ", or raise the JVM's -Xmx / -XX:MaxDirectMemorySize", e);
    }

    /** Copies {@code page} into a free slot; returns the slot or -1 when the pool is empty. */
    public int copyOf(Page page) {
        Integer slot = freeSlots.poll();
        if (slot == null) return -1;
        page.copyTo(memoryOf(slot), offsetOf(slot));
        return slot;
    }

    /** Copies slot contents to {@code dst}. */
    public void copyOut(int slot, ByteBuffer dst, int dstOffset) {
        dst.put(dstOffset, memoryOf(slot), offsetOf(slot), pageSize);
    }

    /** The memory holding slot {@code slot}, which starts at {@link #offsetOf} in it. */
    public ByteBuffer memoryOf(int slot) {
        return chunks[slot / slotsPerChunk];
    }

    /** Byte offset of a slot in {@link #memoryOf}. */
    public int offsetOf(int slot) {
        return (slot % slotsPerChunk) * pageSize;
    }

    /** Returns a slot to the pool. */
    public void free(int slot) {
        freeSlots.offer(boxes[slot]);
    }

    /** Slots in all. */
    public int capacity() {
        return capacity;
    }

    /** Slots handed out. */
    public int used() {
        return capacity - freeSlots.size();
    }
}
