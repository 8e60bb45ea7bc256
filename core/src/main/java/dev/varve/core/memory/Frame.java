package dev.varve.core.memory;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * A slot of page memory and the page it currently holds.
 *
 * <p>Who may change what: {@code pins} by anyone (atomic); {@code state} by the thread that claimed the frame
 * (CAS); {@code version} by eviction's claim; {@code dirty}, {@code cpPending}, {@code cpCopy} by a writer holding the
 * write latch, by the checkpointer holding the read latch (writers excluded). They are volatile because eviction reads
 * them without a latch.
 */
public final class Frame extends Page {
    static final int FREE = 0;
    static final int LOADING = 1;
    static final int READY = 2;
    static final int FAILED = 3;

    private static final VarHandle PINS;
    private static final VarHandle STATE;
    private static final VarHandle CHILD_HINTS;
    private static final VarHandle VERSION;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PINS = l.findVarHandle(Frame.class, "pins", int.class);
            STATE = l.findVarHandle(Frame.class, "state", int.class);
            CHILD_HINTS = l.findVarHandle(Frame.class, "childHints", Frame[].class);
            VERSION = l.findVarHandle(Frame.class, "version", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final int slot;
    volatile long pageId = PageId.NONE;
    @SuppressWarnings("unused") // through PINS
    private volatile int pins;
    @SuppressWarnings("unused") // through STATE
    private volatile int state = FREE;
    /**
     * Moves on each time eviction claims the frame, before anything else is read into it: an optimistic reader
     * ({@link #stampIfHolding}) that finds it unchanged after reading knows the page it read was this frame's page
     * throughout (a seqlock whose writer is eviction: the pages themselves change only under a latch, or under a
     * partition lock that such readers hold).
     */
    @SuppressWarnings("unused") // through VERSION
    private volatile int version;
    /** Second-chance bit of the clock; racy by design (a lost update only costs one more round). */
    boolean referenced;
    /** Changed since the last checkpoint collected this page. */
    volatile boolean dirty;
    /**
     * The checkpoint epoch in which the page last turned dirty (see {@code CheckpointFrames.settle}); under the latch.
     */
    long dirtyEpoch;
    /** In the running checkpoint's page set and not yet written by it. */
    volatile boolean cpPending;
    /** Checkpoint-buffer slot holding this page's image at the mark, or -1. */
    volatile int cpCopy = -1;
    /** Checkpoint generation in which the physical WAL last logged a full image of this page. */
    private long physicalImageGeneration = -1;
    /**
     * The snapshot layer's note of this page's latest archived pre-state, opaque to page memory (the base its next
     * pre-state may be archived as a diff against); guarded by the write latch.
     */
    private Object captureNote;
    /**
     * For an inner page: the frames its children were last found in, by child index ({@link ChildHints}); its entries
     * are racy by design, every hint is checked against the frame's page id before use. Replaced only by CAS and
     * dropped when the frame takes another page, so {@link ChildHints} can count what the arrays hold.
     */
    volatile Frame[] childHints;

    Frame(ByteBuffer buffer, int base, int size, int slot) {
        super(buffer, base, size);
        this.slot = slot;
    }

    /** The page id this frame holds (valid while pinned). */
    public long heldPageId() {
        return pageId;
    }

    /** Generation of the last full-image physical record (physical WAL mode); guarded by the write latch. */
    public long physicalImageGeneration() {
        return physicalImageGeneration;
    }

    /** Records that a full image was logged in {@code generation}; caller holds the write latch. */
    public void physicalImageGeneration(long generation) {
        this.physicalImageGeneration = generation;
    }

    /** The snapshot layer's note of this page's latest capture, or null; caller holds the write latch. */
    public Object captureNote() {
        return captureNote;
    }

    /** Replaces the note of this page's latest capture; caller holds the write latch. */
    public void captureNote(Object note) {
        this.captureNote = note;
    }

    void pin() {
        PINS.getAndAdd(this, 1);
    }

    void unpin() {
        int before = (int) PINS.getAndAdd(this, -1);
        assert before > 0 : "unpin of an unpinned frame " + slot;
    }

    int pins() {
        return (int) PINS.getVolatile(this);
    }

    int state() {
        return (int) STATE.getAcquire(this);
    }

    void state(int s) {
        STATE.setRelease(this, s);
    }

    /**
     * Whether this frame, which the caller has just pinned, holds page {@code id} loaded: the state is read as a
     * volatile after the pin, so an eviction either sees the pin or has already moved the state on (see
     * {@code PageTable.claimForEviction}).
     */
    boolean holdsReady(long id) {
        return (int) STATE.getVolatile(this) == READY && pageId == id;
    }

    /**
     * An optimistic read's stamp of this frame for page {@code id}, which the caller reads without a pin: its slot and
     * version, or -1 when it does not hold the page loaded. The version is read first, so an eviction that claims the
     * frame after it is seen by {@link #validate}. Sets the clock's bit as a pin would.
     */
    long stampIfHolding(long id) {
        int v = (int) VERSION.getAcquire(this);
        if (!holdsReady(id)) return -1;
        reference();
        return (long) slot << 32 | (v & 0xFFFF_FFFFL);
    }

    /**
     * Sets the clock's second-chance bit of a page just found here, writing it only when it is clear: a hot page's
     * line then stays shared between the cores reading it.
     */
    void reference() {
        if (!referenced) referenced = true;
    }

    /** Whether the frame kept its page since {@code stamp} was taken: what the caller read meanwhile was that page. */
    boolean validate(long stamp) {
        VarHandle.acquireFence(); // the reads of the page come before the version's, as in StampedLock.validate
        return (int) VERSION.getVolatile(this) == (int) stamp;
    }

    /** Eviction claimed the frame: every stamp taken before is void. Called before the frame takes another page. */
    void claimed() {
        VERSION.getAndAdd(this, 1);
    }

    /** Replaces the child hints array {@code expected} (null: none) by {@code next}; false when someone else did first. */
    boolean casChildHints(Frame[] expected, Frame[] next) {
        return CHILD_HINTS.compareAndSet(this, expected, next);
    }

    /** Takes the child hints array away (null when none). */
    Frame[] takeChildHints() {
        return (Frame[]) CHILD_HINTS.getAndSet(this, (Frame[]) null);
    }

    boolean casState(int expected, int next) {
        return STATE.compareAndSet(this, expected, next);
    }

    /** Dirty or holding the checkpoint's only copy of its image: cannot be evicted. */
    boolean held() {
        return dirty || (cpPending && cpCopy < 0);
    }
}
