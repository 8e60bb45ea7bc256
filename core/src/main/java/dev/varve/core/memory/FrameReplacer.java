package dev.varve.core.memory;

import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import org.jctools.queues.atomic.MpmcAtomicArrayQueue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Frame replacement: a page that is not resident gets a frame — a free one, else the frame of a clean page the clock
 * evicts — is mapped to it in the page table and read into it from its file (zeroed, when it is new).
 *
 * <p>Apart from {@link PageMemory} because only a miss comes here: a page found through the table or a child hint
 * never does, so the hit path is untouched by it. Which page leaves memory is decided here alone, and the state that
 * decision needs (the free frames, the clock hand) changes nowhere else. The latching, dirty tracking and
 * copy-on-write every acquire goes through stay in page memory; the clock sees their outcome only through
 * {@link Frame#held}, and so never evicts a dirty page or the checkpoint's only image of one (no-steal).
 *
 * <p>Design note. A slot's frame is made the first time the slot is needed, not at open: the heap then holds frames
 * for the pages a store has used, not for its whole region. Made at open, a region's frames (65,536 and 6 MB for 256
 * MiB, half a million and 50 MB for 2 GiB) were young objects that every young collection copied until they were
 * promoted, whether or not the store ever used those pages. The clock reaches the slots only once every slot has a
 * frame, since until then a miss makes one instead of evicting.
 */
final class FrameReplacer {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Frame[].class);

    private final PageMemory memory;
    /** By slot; null until the slot's frame is made, published by a release store (see {@link #make}). */
    private final Frame[] frames;
    private final GrowingRegion region;
    /** Slots below this have been claimed for a frame. */
    private final AtomicInteger made = new AtomicInteger();
    /** Frames handed back by a miss that lost its race to map the page. */
    private final MpmcAtomicArrayQueue<Frame> freeFrames;
    private final AtomicInteger clockHand = new AtomicInteger();
    private final LongAdder pagesRead = new LongAdder();
    private final LongAdder pagesEvicted = new LongAdder();

    /** Replacement over {@code frames}, none of them made yet, their pages in {@code region}. */
    FrameReplacer(PageMemory memory, Frame[] frames, GrowingRegion region) {
        this.memory = memory;
        this.frames = frames;
        this.region = region;
        freeFrames = new MpmcAtomicArrayQueue<>(frames.length);
    }

    /**
     * The frame of {@code pageId}, which the table did not hold, pinned: a frame taken for it and loaded (from disk
     * unless {@code fresh}), or, when another thread mapped the page first, that thread's frame, which may still be
     * loading.
     */
    Frame bringIn(long pageId, boolean fresh) {
        Frame free = takeFrame();
        free.pageId = pageId;
        free.pin();
        Frame existing = memory.table.putIfAbsentOrPin(pageId, free);
        if (existing == null) {
            load(free, pageId, fresh);
            return free;
        }
        free.unpin();
        free.pageId = PageId.NONE;
        free.state(Frame.FREE);
        freeFrames.offer(free);
        return existing;
    }

    private void load(Frame f, long pageId, boolean fresh) {
        try {
            if (fresh) {
                f.zero(0, memory.pageSize);
                f.putLong(PageHeader.PAGE_ID_OFFSET, pageId);
            } else {
                memory.store.read(pageId, f.buffer(), f.base());
                f.changedWholly(); // read around the page's accessors: what it held before is unknown
                pagesRead.increment();
            }
            f.state(Frame.READY);
        } catch (RuntimeException | Error e) {
            memory.table.remove(pageId, f);
            f.pageId = PageId.NONE;
            f.state(Frame.FAILED); // reclaimed by the clock once every waiter has unpinned it
            f.unpin();
            throw e;
        }
    }

    /** A frame nobody else can see: a free one, one made for a slot never used, or a clean page evicted by the clock. */
    private Frame takeFrame() {
        long start = 0;
        while (true) {
            Frame f = freeFrames.poll();
            if (f != null) {
                f.state(Frame.LOADING);
                return f;
            }
            f = make();
            if (f != null) return f;
            f = evict();
            if (f != null) return f;
            if (start == 0) start = System.nanoTime();
            memory.waitForCleanPage(start);
        }
    }

    /**
     * A frame, loading, for the next slot never used, or null when every slot the region can give has one. The slot is
     * claimed only once its chunk of the region is allocated, so a slot is never left claimed without a frame. The
     * frame is published to the clock by a release store after it is loading, so the clock, reading the slot with an
     * acquire, sees it whole and passes it by until it is loaded; everyone else finds it through the page table, whose
     * monitor publishes it.
     */
    private Frame make() {
        while (true) {
            int slot = made.get();
            if (slot >= region.capacity()) return null;
            ByteBuffer buffer = region.bufferOf(slot);
            if (buffer == null) return null; // the region stopped growing there: evict instead
            if (!made.compareAndSet(slot, slot + 1)) continue;
            Frame f;
            try {
                f = new Frame(buffer, region.offsetOf(slot), memory.pageSize, slot);
            } catch (OutOfMemoryError e) {
                // the slot stays without a frame (the clock passes it by): with the heap exhausted, that page of the
                // region is the least of the store's troubles, and handing the slot out again could race its makers
                throw PageSlots.cannotAllocate("dataRegionSize", (long) frames.length * memory.pageSize, e);
            }
            f.state(Frame.LOADING);
            SLOT.setRelease(frames, slot, f);
            return f;
        }
    }

    private Frame evict() {
        int n = frames.length;
        for (int scanned = 0; scanned < 2 * n; scanned++) {
            Frame f = (Frame) SLOT.getAcquire(frames, Math.floorMod(clockHand.getAndIncrement(), n));
            if (f == null) continue; // its maker has not published it yet
            int s = f.state();
            if (s == Frame.FAILED) {
                if (f.pins() == 0 && f.casState(Frame.FAILED, Frame.LOADING)) return f;
                continue;
            }
            if (s != Frame.READY || f.pins() != 0 || f.held()) continue;
            if (f.referenced) {
                f.referenced = false;
                continue;
            }
            long id = f.pageId;
            if (memory.table.claimForEviction(id, f)) {
                f.pageId = PageId.NONE;
                memory.childHints.drop(f);
                pagesEvicted.increment();
                return f;
            }
        }
        return null;
    }

    long pagesRead() {
        return pagesRead.sum();
    }

    long pagesEvicted() {
        return pagesEvicted.sum();
    }

    int framesMade() {
        return made.get();
    }
}
