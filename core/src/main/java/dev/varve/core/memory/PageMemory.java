package dev.varve.core.memory;

import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.jctools.queues.atomic.MpscAtomicArrayQueue;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * Off-heap page memory bounded by the data region: direct-buffer chunks, allocated as used ({@link GrowingRegion}), cut
 * into frames, a striped page table, clock replacement of clean pages ({@link FrameReplacer}), per-page latches, and
 * head-room; dirty tracking and the checkpoint's copy-on-write are {@link CheckpointFrames}'.
 *
 * <p>Design note. No-steal: a dirty page is never evicted; only a checkpoint makes it clean. Writers therefore
 * reserve head-room before an operation ({@link #awaitHeadroom}) while holding no lock the checkpointer needs, and
 * trigger a checkpoint when the region runs short; inside an operation, a frame is always found. A writer that
 * changes a page the running checkpoint has not written yet first copies its image at the mark into the
 * checkpoint buffer; if that buffer is full it waits with the page's latch released, so the checkpointer can
 * always finish that page.
 */
public final class PageMemory implements PageAccess, AutoCloseable {
    /**
     * Frames never handed out as head-room: readers can always load pages, and an operation that dirties a little
     * more than its estimate (a split deeper than it counted) still finds clean frames instead of waiting for a
     * checkpoint that its own lock blocks. The overflow chains a write frees (~260 pages at 1 MiB) are reserved by
     * the write itself, not taken from here: several writers freeing them at once would exhaust it. The slack is a
     * sixteenth of the memory allocated so far ({@link #slackWithin}), not of the whole region: a fixed sixteenth of a
     * 2 GiB region would have the first write wait for 160 MiB of memory to be allocated before it starts.
     */
    private static final int MIN_SLACK_FRAMES = 320;
    private static final long WAIT_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);

    final PageStore store;
    final int pageSize;
    private final Frame[] frames;
    final PageTable table;
    final ChildHints childHints;
    private final PageSlots checkpointBuffer;
    private final CheckpointFrames checkpointFrames;
    private final AtomicLong heldFrames = new AtomicLong();
    private final AtomicLong reservedFrames = new AtomicLong();
    /** Time writers waited in {@link #latchForChange} for a checkpoint-buffer slot, since open. */
    private final LongAdder slotWaitNanos = new LongAdder();
    private volatile PageWriteHook[] hooks = new PageWriteHook[0];
    /** Called when the region or the checkpoint buffer runs short: starts a checkpoint. */
    private volatile Runnable pressure = () -> { };
    /** Set while recovery applies the WAL: pages are cleaned only between its records, never while one is applied. */
    private volatile boolean recovering;
    volatile boolean closed;
    private final PageCopier copier = new PageCopier(this);
    private final PageAccess unlatchedReads = new UnlatchedReads(this);
    private final GrowingRegion region;
    private final FrameReplacer replacer;

    /** Page memory of {@code regionBytes} over {@code store}, with a checkpoint buffer of {@code checkpointBufferBytes}. */
    public PageMemory(PageStore store, long regionBytes, long checkpointBufferBytes) {
        this(store, regionBytes, checkpointBufferBytes, frames -> new GrowingRegion(frames, store.pageSize()));
    }

    /** As above, the region's memory from {@code regionOfFrames} (a test's, whose growth can fail on demand). */
    PageMemory(PageStore store, long regionBytes, long checkpointBufferBytes, IntFunction<GrowingRegion> regionOfFrames) {
        this.store = store;
        this.pageSize = store.pageSize();
        long count = regionBytes / pageSize;
        if (count < 4L * MIN_SLACK_FRAMES) throw new IllegalArgumentException("data region of " + regionBytes + " bytes holds " + count
                + " pages; at least " + 4 * MIN_SLACK_FRAMES + " are needed");
        if (count > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("data region too large: " + regionBytes);
        // the dirty lists hold every frame: allocated with the region, a heap too small for them names dataRegionSize
        MpscAtomicArrayQueue<Frame> dirtyFrames;
        MpscAtomicArrayQueue<Frame> markedFrames;
        try {
            frames = new Frame[(int) count];
            dirtyFrames = new MpscAtomicArrayQueue<>(frames.length);
            markedFrames = new MpscAtomicArrayQueue<>(frames.length);
            region = regionOfFrames.apply(frames.length);
            table = new PageTable(frames);
            childHints = new ChildHints(ChildHints.REFS_PER_FRAME * (long) frames.length);
            replacer = new FrameReplacer(this, frames, region);
        } catch (OutOfMemoryError e) {
            throw PageSlots.cannotAllocate("dataRegionSize", regionBytes, e);
        }
        checkpointBuffer = new PageSlots(checkpointBufferBytes, pageSize, "checkpointBufferSize");
        checkpointFrames = new CheckpointFrames(dirtyFrames, markedFrames, checkpointBuffer, heldFrames);
    }

    /** Adds a hook called at every page change. */
    public synchronized void addWriteHook(PageWriteHook hook) {
        PageWriteHook[] h = java.util.Arrays.copyOf(hooks, hooks.length + 1);
        h[h.length - 1] = hook;
        hooks = h;
    }

    /** What to run when memory runs short (start a checkpoint). */
    public void onPressure(Runnable r) {
        pressure = r;
    }

    @Override
    public int pageSize() {
        return pageSize;
    }

    /** The page store behind this memory. */
    public PageStore store() {
        return store;
    }

    // ---------------------------------------------------------------- PageAccess

    @Override
    public Page acquireRead(long pageId) {
        Frame f = acquire(pageId, false);
        f.latchRead();
        return f;
    }

    @Override
    public Page acquireReadChild(Page parent, int index, long childId) {
        Frame f = childHints.acquire(this, parent, index, childId);
        f.latchRead();
        return f;
    }

    @Override
    public Page acquireReadAgain(Page last, long pageId) {
        Frame f = acquireAgain(last, pageId);
        f.latchRead();
        return f;
    }

    @Override
    public void releaseRead(Page page) {
        Frame f = (Frame) page;
        f.unlatchRead();
        f.unpin();
    }

    /** Copies of current page images for readers of every page, past this memory ({@link PageCopier}). */
    public PageCopier copier() {
        return copier;
    }

    /**
     * This memory for code that holds a lock excluding every writer of the pages it reads — a partition's B+tree
     * under its partition lock: reads only pin (no latch: nobody can change the page meanwhile, and the
     * checkpointer and snapshot views only read), or read optimistically, writes latch as usual.
     */
    public PageAccess underWriterExclusion() {
        return unlatchedReads;
    }

    /** The frame in slot {@code slot}: what an optimistic read's stamp names. */
    Frame frame(int slot) {
        return frames[slot];
    }

    @Override
    public Page acquireWrite(long pageId) {
        Frame f = acquire(pageId, false);
        latchForChange(f);
        return beforeChange(f, false);
    }

    @Override
    public Page acquireWriteChild(Page parent, int index, long childId) {
        Frame f = childHints.acquire(this, parent, index, childId);
        latchForChange(f);
        return beforeChange(f, false);
    }

    @Override
    public Page acquireNew(long pageId) {
        Frame f = acquire(pageId, true);
        latchForChange(f); // the checkpoint's image is preserved before the old contents go
        f.zero(0, pageSize);
        f.putLong(PageHeader.PAGE_ID_OFFSET, pageId);
        return beforeChange(f, true);
    }

    /** Runs the write hooks on a write-latched frame; on failure the frame is released. */
    private Frame beforeChange(Frame f, boolean fresh) {
        try {
            for (PageWriteHook h : hooks) h.beforeChange(f, fresh);
        } catch (RuntimeException | Error e) {
            f.unlatchWrite();
            f.unpin();
            throw e;
        }
        return f;
    }

    @Override
    public void releaseWrite(Page page) {
        Frame f = (Frame) page;
        try {
            for (PageWriteHook h : hooks) h.afterChange(f);
        } finally {
            f.unlatchWrite();
            f.unpin();
        }
    }

    /**
     * Takes the write latch and makes the page dirty; preserves the checkpoint's image first (copy-on-write). When
     * the checkpoint buffer is full, waits with the latch released until a slot frees or the checkpoint has written
     * the page, so the checkpointer is never blocked by a waiting writer.
     */
    private void latchForChange(Frame f) {
        long start = 0;
        try {
            while (true) {
                f.latchWrite();
                if (checkpointFrames.makeDirty(f)) return;
                f.unlatchWrite();
                if (start == 0) start = System.nanoTime();
                waitOrFail(start, "a checkpoint-buffer slot for page " + PageId.toString(f.pageId));
            }
        } finally {
            if (start != 0) slotWaitNanos.add(System.nanoTime() - start);
        }
    }

    /**
     * Marks the time recovery applies WAL records: no checkpoint runs while it applies one, so a record that fills
     * the region with dirty pages (written under a larger dataRegionSize) can never get a clean page.
     */
    public void recovering(boolean on) {
        recovering = on;
    }

    /**
     * Waits for a clean page to evict, as {@link #waitOrFail}; but fails at once when recovery holds every frame
     * dirty, as waiting out the limit would not free one.
     */
    void waitForCleanPage(long startNanos) {
        int usable = region.capacity();
        if (recovering && heldFrames.get() >= usable)
            throw new StorageException("recovery filled the data region with the changes of one WAL record (" + usable
                    + " pages of " + pageSize + " bytes, all dirty, none of which can be written out before the record is applied): "
                    + "dataRegionSize of " + (long) frames.length * pageSize + " bytes" + (usable < frames.length ? " (of which the JVM "
                    + "gave " + (long) usable * pageSize + ")" : "") + " is too small to replay it; reopen with a larger "
                    + "dataRegionSize (the one the store was written with, if that was larger)");
        waitOrFail(startNanos, "a clean page to evict (" + heldPages() + " of " + usable + " pages dirty)");
    }

    void waitOrFail(long startNanos, String what) {
        pressure.run();
        if (System.nanoTime() - startNanos > WAIT_LIMIT_NANOS)
            throw new StorageException("gave up waiting " + TimeUnit.NANOSECONDS.toSeconds(WAIT_LIMIT_NANOS) + " s for " + what
                    + " (is the checkpointer stuck or failed?)");
        LockSupport.parkNanos(50_000);
    }

    /** The frame holding {@code pageId}, pinned, loaded from disk unless {@code fresh}. */
    Frame acquire(long pageId, boolean fresh) {
        if (closed) throw new IllegalStateException("page memory is closed");
        if (pageId < 0) throw new IllegalArgumentException("invalid page id " + pageId);
        while (true) {
            Frame f = table.getAndPin(pageId);
            if (f == null) f = replacer.bringIn(pageId, fresh);
            if (awaitReady(f)) {
                f.reference();
                return f;
            }
            f.unpin(); // its load failed: try again, which reports the failure to this caller too
        }
    }

    /** {@link #acquire} of {@code pageId} that tries {@code last}, the page a previous acquire of it returned, first. */
    Frame acquireAgain(Page last, long pageId) {
        if (closed) throw new IllegalStateException("page memory is closed");
        Frame f = last instanceof Frame ? ChildHints.pinIfHolding((Frame) last, pageId) : null;
        return f != null ? f : acquire(pageId, false);
    }

    static boolean awaitReady(Frame f) {
        for (int spins = 0; ; spins++) {
            int s = f.state();
            if (s == Frame.READY) return true;
            if (s != Frame.LOADING) return false;
            if (spins < 100) Thread.onSpinWait();
            else Thread.yield();
        }
    }

    // ---------------------------------------------------------------- head-room

    /**
     * Blocks until {@code pages} more frames may become dirty without exhausting the region, then reserves them.
     * Called before an operation, holding no lock; pair with {@link #releaseHeadroom}.
     */
    public void awaitHeadroom(int pages) {
        awaitHeadroom(pages, () -> { });
    }

    /**
     * As {@link #awaitHeadroom(int)}, running {@code stillPossible} before each wait: it throws when no checkpoint
     * can free frames any more (the checkpointer failed), so a writer is told that failure at once instead of
     * waiting out the limit for room that will never come.
     */
    public void awaitHeadroom(int pages, Runnable stillPossible) {
        long start = 0;
        while (!tryReserve(pages)) {
            stillPossible.run();
            if (start == 0) start = System.nanoTime();
            waitOrFail(start, "room in the data region (" + heldFrames.get() + " of " + region.capacity() + " pages dirty)");
        }
    }

    /**
     * Reserves head-room for {@code pages} if there is room now; false (nothing reserved) otherwise. Head-room is
     * granted only within the region's memory allocated so far, slack included, which grows here (holding no lock,
     * see {@link #awaitHeadroom}) when a reservation needs it: a region that then cannot grow has already given every
     * frame it promised, and the slack stays in memory that exists.
     */
    public boolean tryReserve(int pages) {
        int usable = region.capacity(); // the region's pages, unless it could not grow to them all (see GrowingRegion)
        long limit = headroomLimit();
        if (pages > limit) throw new IllegalArgumentException("an operation touching ~" + pages + " pages cannot fit a data region of "
                + usable + " pages; " + (usable < frames.length ? "the JVM gave it only " + usable + " of its " + frames.length + " pages: raise "
                + "-XX:MaxDirectMemorySize, or split the batch" : "raise dataRegionSize or split the batch"));
        while (true) {
            long r = reservedFrames.get();
            long wanted = heldFrames.get() + r + pages;
            int allocated = region.allocated();
            long room = allocated - slackWithin(allocated);
            if (wanted > room - region.framesPerChunk()) region.growAhead(); // within a chunk of the end: the next one
            if (wanted > room) {
                if (wanted <= limit && region.growPast(allocated)) continue;
                return false;
            }
            if (reservedFrames.compareAndSet(r, r + pages)) return true;
        }
    }

    /** The most frames that may be held (dirty, or the checkpoint's only image) at once: the region less its slack. */
    public long headroomLimit() {
        int usable = region.capacity();
        return usable - slackWithin(usable);
    }

    /** Frames of {@code frames} never handed out as head-room (see {@link #MIN_SLACK_FRAMES}). */
    private static long slackWithin(int frames) {
        return Math.max(MIN_SLACK_FRAMES, frames / 16);
    }

    /**
     * Head-room a logged change of {@code bytes} (keys and values) in {@code operations} operations may need: its
     * overflow pages plus a split path per operation. Used both live and during replay; each adds the overflow
     * chains the change frees (live read from the leaves, in replay the most they can be), so a change accepted live
     * can always be replayed — in a region as large as the one that accepted it (an open refuses a smaller region
     * that the changes it will replay certainly do not fit, before it writes).
     */
    public int headroomFor(long bytes, int operations) {
        long pages = bytes / (pageSize - 64) + 16L * operations;
        return (int) Math.min(Integer.MAX_VALUE, pages);
    }

    /** The most head-room one change may reserve: half the region, leaving the rest to the checkpoint's progress. */
    public int maxHeadroom() {
        return frames.length / 2;
    }

    /** Returns head-room reserved by {@link #awaitHeadroom}. */
    public void releaseHeadroom(int pages) {
        reservedFrames.addAndGet(-pages);
    }

    /** Head-room reserved and not yet returned, in pages: 0 whenever no operation is in progress. */
    public long reservedHeadroom() {
        return reservedFrames.get();
    }

    // ---------------------------------------------------------------- checkpoint support

    /**
     * Step 1 of a checkpoint, called under the checkpoint write lock (no writer inside an operation): every dirty
     * page becomes part of the checkpoint and clean for the next one, as writers and {@link #markedPages} see them.
     * Costs nothing per page; the caller takes the pages with {@link #markedPages} as soon as it released the lock.
     */
    public void markCheckpoint() {
        checkpointFrames.mark();
    }

    /**
     * The pages of the checkpoint just marked, in the order they turned dirty (the caller sorts them); call once per
     * mark, before the next one.
     */
    public List<Frame> markedPages() {
        return checkpointFrames.markedPages();
    }

    /**
     * Copies the image of {@code f} at the checkpoint mark into {@code dst} at {@code offset}. The page stays in the
     * checkpoint's set until {@link #finishCheckpointPage}, which the checkpointer calls only after the image reached
     * the page file: until then the frame cannot be evicted and re-read stale from disk.
     */
    public void copyCheckpointImage(Frame f, ByteBuffer dst, int offset) {
        checkpointFrames.copyImage(f, dst, offset);
    }

    /** The page's image at the mark is in its file: it leaves the checkpoint's set; its copy-on-write slot frees. */
    public void finishCheckpointPage(Frame f) {
        f.latchRead();
        checkpointFrames.finishLatched(f);
    }

    /**
     * {@link #finishCheckpointPage}, unless a writer holds the page's latch: false then, and nothing changed. A
     * writer waiting for a checkpoint-buffer slot holds the latches of pages it copied; the checkpointer finishes the
     * others first, which frees the slots it waits for.
     */
    public boolean tryFinishCheckpointPage(Frame f) {
        if (!f.tryLatchRead()) return false;
        checkpointFrames.finishLatched(f);
        return true;
    }

    /** Marks every page of an abandoned checkpoint dirty again (its writes failed), so the next one retries. */
    public void abandonCheckpoint(List<Frame> set) {
        checkpointFrames.abandon(set);
    }

    // ---------------------------------------------------------------- figures

    /** Frames in the region. */
    public int capacityPages() {
        return frames.length;
    }

    /** Bytes of the region allocated so far (see {@link GrowingRegion}). */
    public long allocatedBytes() {
        return (long) region.allocated() * pageSize;
    }

    /** Pages that cannot be evicted now (dirty, or the checkpoint's only image). */
    public long heldPages() {
        return heldFrames.get();
    }

    /** Dirty pages not yet collected by a checkpoint (for triggers and metrics). */
    public int dirtyPages() {
        return checkpointFrames.dirtyCount();
    }

    /** Checkpoint-buffer slots in use. */
    public int checkpointBufferUsed() {
        return checkpointBuffer.used();
    }

    /** Checkpoint-buffer slots in all. */
    public int checkpointBufferCapacity() {
        return checkpointBuffer.capacity();
    }

    /** Pages read from disk since open. */
    public long pagesRead() {
        return replacer.pagesRead();
    }

    /** Clean pages evicted since open. */
    public long pagesEvicted() {
        return replacer.pagesEvicted();
    }

    /** Slots of the region given a frame so far: frames are made as pages first need them (see {@link FrameReplacer}). */
    int framesMade() {
        return replacer.framesMade();
    }

    /**
     * Time writers waited, inside a change, for a checkpoint-buffer slot to copy a page of the running checkpoint into
     * (a change copying more pages than it reserved slots for, see {@code Throttle}), since open.
     */
    public long slotWaitNanos() {
        return slotWaitNanos.sum();
    }

    /** Pages copied into the checkpoint buffer since open. */
    public long copyOnWritePages() {
        return checkpointFrames.copyOnWritePages();
    }

    @Override
    public void close() {
        closed = true;
        region.awaitAllocations();
        checkpointBuffer.awaitAllocations();
    }
}
