package dev.varve.core.memory;

import dev.varve.core.page.Page;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * A bounded off-heap pool of page-sized slots: the checkpoint buffer (copy-on-write images of pages the running
 * checkpoint has not written yet) and the snapshot capture buffer (pre-states on their way to the archive). Slots are
 * handed out and returned through a lock-free stack ({@link FreeSlots}): writers take, checkpoint threads or the
 * archiver give back, and the slot given back last is handed out first, its memory likely still cached. The slots'
 * memory is allocated as slots are first handed out, {@value #CHUNK_BYTES} bytes at a time ({@link GrowingRegion}): a
 * store that never checkpoints under writes, or never snapshots, does not pay at open for buffers of tens of MiB it
 * would not use. A slot given back is handed out again before any slot never used, so the memory follows the most slots
 * in use at once, not every slot in turn: a queue of all the slots, cycling through them, had a 64 MiB checkpoint
 * buffer allocated whole within a store's first checkpoints, each 4 MiB zero-filled while a writer, holding a page's
 * latch, waited for a slot in it. Slots whose memory the JVM cannot give are never handed out.
 */
public final class PageSlots {
    static final int CHUNK_BYTES = 4 << 20;

    private final GrowingRegion memory;
    private final int pageSize;
    /** Slots given back, to be handed out again. */
    private final FreeSlots freeSlots;
    /** Slots {@code [0, fresh)} were handed out at least once; the next slot never used is {@code fresh}. */
    private final AtomicInteger fresh = new AtomicInteger();
    /** Slots handed out whose chunk could not be allocated: gone from the pool for good. */
    private final AtomicInteger lost = new AtomicInteger();

    /** A pool of {@code bytes / pageSize} slots; {@code setting} names the configuration that sized it, for errors. */
    public PageSlots(long bytes, int pageSize, String setting) {
        this(bytes, pageSize, setting, CHUNK_BYTES, ByteBuffer::allocateDirect, DirectMemory.growthAllocator());
    }

    /** As above, its memory taken from {@code allocator} in chunks of {@code chunkBytes}. */
    PageSlots(long bytes, int pageSize, String setting, int chunkBytes, IntFunction<ByteBuffer> allocator) {
        this(bytes, pageSize, setting, chunkBytes, allocator, allocator);
    }

    private PageSlots(long bytes, int pageSize, String setting, int chunkBytes, IntFunction<ByteBuffer> first, IntFunction<ByteBuffer> growth) {
        long slots = bytes / pageSize;
        // the slot numbers are ints, and the free list and its boxes arrays
        if (slots > Integer.MAX_VALUE - 8) throw new IllegalArgumentException(setting + " of " + bytes + " bytes holds too many pages");
        this.pageSize = pageSize;
        int capacity = (int) slots;
        try {
            this.memory = new GrowingRegion(capacity, pageSize, setting, chunkBytes, first, growth);
        } catch (OutOfMemoryError e) {
            throw cannotAllocate(setting, bytes, e);
        }
        this.freeSlots = new FreeSlots(capacity);
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
        while (true) {
            int given = freeSlots.pop();
            int slot = given >= 0 ? given : takeFresh();
            if (slot < 0) return -1;
            ByteBuffer buffer = memory.bufferOf(slot);
            if (buffer == null) { // the JVM could not give its memory (logged once): the pool goes on without it
                lost.incrementAndGet();
                continue;
            }
            page.copyTo(buffer, memory.offsetOf(slot));
            return slot;
        }
    }

    /** The first slot never handed out, now taken; -1 when none is left that may have memory. */
    private int takeFresh() {
        for (int n; (n = fresh.get()) < memory.capacity(); ) {
            if (fresh.compareAndSet(n, n + 1)) return n;
        }
        return -1;
    }

    /** Copies slot contents to {@code dst}. */
    public void copyOut(int slot, ByteBuffer dst, int dstOffset) {
        dst.put(dstOffset, memoryOf(slot), offsetOf(slot), pageSize);
    }

    /** The memory holding slot {@code slot}, one {@link #copyOf} handed out, which starts at {@link #offsetOf} in it. */
    public ByteBuffer memoryOf(int slot) {
        return memory.bufferOf(slot);
    }

    /** Byte offset of a slot in {@link #memoryOf}. */
    public int offsetOf(int slot) {
        return memory.offsetOf(slot);
    }

    /** Returns a slot to the pool. */
    public void free(int slot) {
        freeSlots.push(slot);
    }

    /** Slots in all: those the setting asked for, less any whose memory the JVM could not give. */
    public int capacity() {
        return memory.capacity();
    }

    /** Slots handed out and not given back. */
    public int used() {
        return fresh.get() - lost.get() - freeSlots.size();
    }

    /** Waits for a chunk allocation still under way (at close: no allocating thread outlives the store). */
    public void awaitAllocations() {
        memory.awaitAllocations();
    }
}
