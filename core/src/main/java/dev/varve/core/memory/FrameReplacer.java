package dev.varve.core.memory;

import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import org.jctools.queues.atomic.MpmcAtomicArrayQueue;

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
 */
final class FrameReplacer {
    private final PageMemory memory;
    private final Frame[] frames;
    private final MpmcAtomicArrayQueue<Frame> freeFrames;
    private final AtomicInteger clockHand = new AtomicInteger();
    private final LongAdder pagesRead = new LongAdder();
    private final LongAdder pagesEvicted = new LongAdder();

    /** Replacement over {@code frames}, all of them free. */
    FrameReplacer(PageMemory memory, Frame[] frames) {
        this.memory = memory;
        this.frames = frames;
        freeFrames = new MpmcAtomicArrayQueue<>(frames.length);
        for (Frame f : frames) freeFrames.offer(f);
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

    /** A frame nobody else can see: from the free queue, or a clean page evicted by the clock. */
    private Frame takeFrame() {
        long start = 0;
        while (true) {
            Frame f = freeFrames.poll();
            if (f != null) {
                f.state(Frame.LOADING);
                return f;
            }
            f = evict();
            if (f != null) return f;
            if (start == 0) start = System.nanoTime();
            memory.waitForCleanPage(start);
        }
    }

    private Frame evict() {
        int n = frames.length;
        for (int scanned = 0; scanned < 2 * n; scanned++) {
            Frame f = frames[Math.floorMod(clockHand.getAndIncrement(), n)];
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
}
