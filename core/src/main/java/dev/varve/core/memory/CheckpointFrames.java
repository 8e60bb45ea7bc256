package dev.varve.core.memory;

import dev.varve.core.page.PageId;
import org.jctools.queues.atomic.MpscAtomicArrayQueue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Which checkpoint each dirty frame belongs to, and the images the running checkpoint writes: the frames that turned
 * dirty since the last mark, the mark that hands them to the checkpoint, the copy-on-write of a page the checkpoint has
 * not written yet, and a page leaving the checkpoint's set (written) or rejoining the next one (abandoned).
 *
 * <p>Design note. This is the checkpoint's side of {@link PageMemory}, kept apart so page memory reads as frames,
 * latches and head-room. A frame's dirty and checkpoint fields change here only under its latch (a writer's write
 * latch, the checkpointer's read latch), held by the caller or taken by the method; {@link #mark} touches no frame and
 * runs under the checkpoint write lock, and {@link #copyImage} reads a copy-on-write image without a latch (see there).
 * The count of held frames is page memory's (head-room is reckoned with it); this class moves it as frames leave and
 * rejoin the checkpoint.
 */
final class CheckpointFrames {
    /**
     * The frames that turned dirty since the last checkpoint mark, each once (it joins when it turns dirty). The mark
     * swaps it with {@link #markedFrames} and moves {@link #epoch} on; that is all it does under the checkpoint write
     * lock, with every writer waiting. The frames become the checkpoint's ({@link #settle}) afterwards, each under its
     * latch, by the checkpointer or by the first writer that changes one first: walking the region under the lock cost
     * 1 to 3 ms for 131,072 frames, and flipping each dirty frame's flags 0.3 to 1.6 ms, most of a fixed-rate writer's
     * worst case.
     */
    private volatile MpscAtomicArrayQueue<Frame> dirtyFrames;
    /** The running checkpoint's frames until {@link #markedPages} takes them; then empty, the next mark's dirty list. */
    private MpscAtomicArrayQueue<Frame> markedFrames;
    /** Checkpoint marks so far; a frame dirty since an earlier epoch belongs to the running checkpoint. */
    private volatile long epoch;
    private final PageSlots checkpointBuffer;
    /** Page memory's count of frames that cannot be evicted (dirty, or the checkpoint's only image). */
    private final AtomicLong heldFrames;
    private final LongAdder copyOnWritePages = new LongAdder();

    /** Over the two dirty lists (each holds every frame of the region), the checkpoint buffer and the held count. */
    CheckpointFrames(MpscAtomicArrayQueue<Frame> dirtyFrames, MpscAtomicArrayQueue<Frame> markedFrames, PageSlots checkpointBuffer,
            AtomicLong heldFrames) {
        this.dirtyFrames = dirtyFrames;
        this.markedFrames = markedFrames;
        this.checkpointBuffer = checkpointBuffer;
        this.heldFrames = heldFrames;
    }

    /**
     * Makes a write-latched page dirty, preserving the checkpoint's image first (copy-on-write). False when that needs
     * a checkpoint-buffer slot and none is free: nothing changed, and the caller waits with the latch released.
     */
    boolean makeDirty(Frame f) {
        settle(f);
        if (f.cpPending && f.cpCopy < 0) {
            int slot = checkpointBuffer.copyOf(f);
            if (slot < 0) return false;
            assert !f.dirty : "a page of the running checkpoint was changed without copy-on-write";
            f.cpCopy = slot;
            becameDirty(f); // held() stays true: held for the checkpoint before, held as dirty now
            copyOnWritePages.increment();
            return true;
        }
        if (!f.dirty) {
            boolean wasHeld = f.held();
            becameDirty(f);
            if (!wasHeld) heldFrames.incrementAndGet();
        }
        return true;
    }

    /** Marks a clean frame dirty (its write latch, or the checkpointer's read latch, held): it joins the next checkpoint. */
    private void becameDirty(Frame f) {
        f.dirtyEpoch = epoch;
        f.dirty = true;
        dirtyFrames.offer(f); // never full: a frame is in it at most once
    }

    /**
     * A frame dirty at the last mark becomes the running checkpoint's, clean for the next one (its latch held): the
     * mark's work for this frame, done by whoever comes to it first.
     */
    private void settle(Frame f) {
        if (!f.dirty || f.dirtyEpoch == epoch) return;
        if (f.cpPending) throw new IllegalStateException("page " + PageId.toString(f.pageId) + " still belongs to the previous checkpoint");
        f.cpPending = true; // before dirty turns false: eviction reads them the other way round, unlatched
        f.dirty = false; // still held: its image lives only in this frame
    }

    /** {@link PageMemory#markCheckpoint}: under the checkpoint write lock, the dirty list becomes the marked one. */
    void mark() {
        MpscAtomicArrayQueue<Frame> marked = dirtyFrames;
        dirtyFrames = markedFrames;
        markedFrames = marked;
        epoch++;
    }

    /**
     * {@link PageMemory#markedPages}: the marked frames, each settled under its read latch — unless a writer holds its
     * write latch, which it takes only in {@link PageMemory#latchForChange}, whose {@link #makeDirty} settles the frame
     * first. Such a writer may hold the latch while it waits for a checkpoint-buffer slot for another page, and no
     * slot frees before this checkpoint has its pages: waiting for the latch here left both waiting until the writer
     * gave up (a 1 MiB value removed right after a mark, its chain freed under the leaf's latch).
     */
    List<Frame> markedPages() {
        List<Frame> set = new ArrayList<>(markedFrames.size());
        for (Frame f; (f = markedFrames.poll()) != null; ) {
            if (f.tryLatchRead()) { // excludes writers; one may have settled it first
                try {
                    settle(f);
                } finally {
                    f.unlatchRead();
                }
            }
            set.add(f);
        }
        return set;
    }

    /** {@link PageMemory#copyCheckpointImage}: {@code f}'s image at the mark into {@code dst} at {@code offset}. */
    void copyImage(Frame f, ByteBuffer dst, int offset) {
        // a copy-on-write image needs no latch: set whole by a writer (the volatile cpCopy published after the copy)
        // and freed only when the checkpoint finishes the page, after its last copy. A writer holds the latches of
        // pages it copied while it waits for a slot for another page, so latching them here would leave it waiting
        // for slots forever.
        int copied = f.cpCopy;
        if (copied >= 0) {
            checkpointBuffer.copyOut(copied, dst, offset);
            return;
        }
        f.latchRead(); // excludes writers; one never waits while holding the latch of a page not copied
        try {
            if (!f.cpPending) throw new IllegalStateException("page " + PageId.toString(f.pageId) + " is not part of the checkpoint");
            int copy = f.cpCopy;
            if (copy >= 0) checkpointBuffer.copyOut(copy, dst, offset);
            else f.copyTo(dst, offset);
        } finally {
            f.unlatchRead();
        }
    }

    /** The page leaves the checkpoint's set, its copy-on-write slot frees; the caller's read latch is released here. */
    void finishLatched(Frame f) {
        try {
            boolean wasHeld = f.held();
            int copy = f.cpCopy;
            if (copy >= 0) {
                f.cpCopy = -1;
                checkpointBuffer.free(copy);
            }
            f.cpPending = false;
            if (wasHeld && !f.held()) heldFrames.decrementAndGet();
        } finally {
            f.unlatchRead();
        }
    }

    /** {@link PageMemory#abandonCheckpoint}: every page of {@code set} still the checkpoint's turns dirty again. */
    void abandon(List<Frame> set) {
        for (Frame f : set) {
            f.latchRead();
            try {
                if (!f.cpPending) continue;
                boolean wasHeld = f.held();
                if (f.cpCopy >= 0) {
                    checkpointBuffer.free(f.cpCopy);
                    f.cpCopy = -1;
                }
                f.cpPending = false;
                if (!f.dirty) becameDirty(f); // a copied-on-write page is dirty (and listed) already
                if (!wasHeld) heldFrames.incrementAndGet();
            } finally {
                f.unlatchRead();
            }
        }
    }

    /** Dirty frames not yet collected by a checkpoint. */
    int dirtyCount() {
        return dirtyFrames.size();
    }

    /** Pages copied into the checkpoint buffer since open. */
    long copyOnWritePages() {
        return copyOnWritePages.sum();
    }
}
