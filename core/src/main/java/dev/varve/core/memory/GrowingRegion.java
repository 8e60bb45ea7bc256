package dev.varve.core.memory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Direct memory for page-sized slots, allocated a chunk at a time as slots first need it, not all at open: the data
 * region (a {@value #REGION_CHUNKS}th of it at a time, {@value #MIN_REGION_CHUNK_BYTES} to {@value
 * #MAX_REGION_CHUNK_BYTES} bytes: an open zero-fills little, a large region is not cut into thousands of pieces) and
 * the checkpoint and capture buffers ({@link PageSlots}); growth leaves the JVM a reserve of direct memory ({@link
 * DirectMemory}). {@code allocateDirect} zero-fills what it allocates, so the kernel faults in every page of it: on the
 * VMs Varve is benchmarked on that cost 3.7 ms a MiB on one thread (a 256 MiB region about a second, the 2.1 GiB region
 * of a recovery with 1 GiB dirty 4 s on two), paid by every open, for pages a store may never use. Allocated as used, a
 * store holds memory for the pages it has touched — an empty store opens at once, and a recovery faults in the pages it
 * replays, not the whole region.
 *
 * <p>Chunks are allocated in slot order, as {@link FrameReplacer} makes frames. The first is allocated here, at open;
 * when a slot is first used in a chunk, the next one is allocated on a thread of its own, so a store that grows
 * seldom waits for its memory. A chunk the JVM cannot give (direct memory taken since open by other stores or
 * libraries: the open already refused settings over the JVM's limit) stops the growth: the memory stays at the chunks
 * it has, {@link #capacity} says so, and its user works within it (the region evicts, a buffer's slots past the stop
 * are never handed out), with a warning naming the setting. Head-room ({@link PageMemory#tryReserve}) is granted only
 * within the chunks {@link #allocated}, growing the region first when it needs more, so a region that stops growing
 * has never promised a frame it cannot give.
 *
 * <p>A chunk is allocated in pieces of at most {@value #PIECE_BYTES} bytes, each a buffer of its own. {@code
 * allocateDirect} zero-fills its memory inside the JVM, where no safepoint can begin until it returns, so every other
 * thread that reaches a safepoint meanwhile — a writer at the JVM's periodic one or at a collection — waits for the
 * whole fill: a 4 MiB buffer held them 2-3 ms on the VMs Varve is benchmarked on, a 256 KiB one 0.2-0.35 ms
 * (docs/performance.md, "Safepoints behind a chunk's zero-fill"). {@link #bufferOf} and {@link #offsetOf} name a slot's
 * piece and its place in it. A thread that needs a chunk still being allocated in the background allocates its
 * remaining pieces itself rather than wait: the background thread yields its core after each piece, and on two busy
 * cores a writer waited 10-24 ms for a chunk that way (docs/performance.md, "What keeps two writers from scaling").
 */
final class GrowingRegion {
    static final int REGION_CHUNKS = 64;
    static final int MIN_REGION_CHUNK_BYTES = 4 << 20;
    static final int MAX_REGION_CHUNK_BYTES = 32 << 20;
    /** The most one {@code allocateDirect} of a chunk asks for (at least a page): see the class comment. */
    static final int PIECE_BYTES = 256 << 10;
    private static final Logger LOG = LoggerFactory.getLogger(GrowingRegion.class);

    private final int frames;
    private final int pageSize;
    /** The setting that sized this memory, named by the warning when it stops growing. */
    private final String setting;
    /** What the warning and the allocating threads call this memory. */
    private final boolean dataRegion;
    private final int framesPerChunk;
    /** Frames in a piece of a chunk; a chunk's last piece may hold fewer. */
    private final int framesPerPiece;
    /**
     * Direct memory of the given size for every chunk after the first: {@code allocateDirect} keeping the JVM's reserve
     * ({@link DirectMemory}), or a test's stand-in that fails as the JVM can.
     */
    private final IntFunction<ByteBuffer> allocator;
    /** By chunk, its allocation; null until it begins. */
    private final AtomicReferenceArray<Allocation> chunks;
    /** Slots that may have frames: all of them until a chunk cannot be allocated, then those of the chunks before it. */
    private volatile int capacity;
    /** Slots of the chunks allocated, from the first on without a gap: memory that frames can be made in now. */
    private volatile int allocated;

    /** A data region of {@code frames} pages of {@code pageSize} bytes, its first chunk allocated now. */
    GrowingRegion(int frames, int pageSize) {
        this(frames, pageSize, "dataRegionSize", regionChunkBytes((long) frames * pageSize), ByteBuffer::allocateDirect, DirectMemory.growthAllocator());
    }

    /** The chunk of a data region of {@code regionBytes}. */
    static int regionChunkBytes(long regionBytes) {
        return (int) Math.max(MIN_REGION_CHUNK_BYTES, Math.min(MAX_REGION_CHUNK_BYTES, regionBytes / REGION_CHUNKS));
    }

    /** As below, every chunk from {@code allocator} (a test's, which may fail as the JVM can). */
    GrowingRegion(int frames, int pageSize, String setting, int chunkBytes, IntFunction<ByteBuffer> allocator) {
        this(frames, pageSize, setting, chunkBytes, allocator, allocator);
    }

    /**
     * Memory for {@code frames} pages that {@code setting} sized, in chunks of {@code chunkBytes}: the first from
     * {@code first}, now (an {@code OutOfMemoryError} reaches the caller), the others from {@code allocator} as used.
     */
    GrowingRegion(int frames, int pageSize, String setting, int chunkBytes, IntFunction<ByteBuffer> first, IntFunction<ByteBuffer> allocator) {
        this.frames = frames;
        this.pageSize = pageSize;
        this.setting = setting;
        this.dataRegion = setting.equals("dataRegionSize");
        this.framesPerChunk = Math.max(1, chunkBytes / pageSize);
        this.framesPerPiece = Math.min(framesPerChunk, Math.max(1, PIECE_BYTES / pageSize));
        this.allocator = allocator;
        this.chunks = new AtomicReferenceArray<>((frames + framesPerChunk - 1) / framesPerChunk);
        this.capacity = frames;
        Allocation firstChunk = new Allocation(0, first);
        chunks.set(0, firstChunk);
        firstChunk.allocate(false);
        try {
            firstChunk.pieces.join();
        } catch (CompletionException e) { // an OutOfMemoryError reaches the opener as itself
            if (e.getCause() instanceof Error err) throw err;
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw e;
        }
        this.allocated = Math.min(frames, framesPerChunk);
    }

    /**
     * The buffer holding {@code slot}'s page (a piece of its chunk), or null when that chunk cannot be allocated (the
     * region has stopped growing). Allocates the chunk on this thread if its allocation has not begun, and the pieces
     * not begun yet if it is under way (waiting for those begun), and begins the next chunk's in the background.
     */
    ByteBuffer bufferOf(int slot) {
        int c = slot / framesPerChunk;
        ByteBuffer[] pieces;
        try {
            Allocation chunk = begin(c, false);
            if (!chunk.pieces.isDone()) chunk.allocate(false);
            pieces = chunk.pieces.join();
        } catch (CompletionException e) {
            stop(c, e.getCause());
            return null;
        }
        if (allocated <= slot) advance(); // the chunk is new: count it (once counted, no lock is taken here)
        if (c + 1 < chunks.length() && chunks.get(c + 1) == null) begin(c + 1, true);
        return pieces[slot % framesPerChunk / framesPerPiece];
    }

    /** The offset of {@code slot}'s page in its {@linkplain #bufferOf buffer}. */
    int offsetOf(int slot) {
        return slot % framesPerChunk % framesPerPiece * pageSize;
    }

    /** Slots that may have frames: every slot, unless a chunk could not be allocated. */
    int capacity() {
        return capacity;
    }

    /** Slots whose memory is allocated (a prefix of the region, in whole chunks). */
    int allocated() {
        return allocated;
    }

    /**
     * Allocates the chunk after those allocated, or waits for it if its allocation is under way. True when the region
     * grew; false when it has every chunk or cannot have the next one.
     */
    boolean grow() {
        return growPast(allocated);
    }

    /**
     * As {@link #grow}, for a caller that saw {@code seen} slots {@link #allocated}: true at once when the region has
     * grown past them since (background allocations finish at any moment), so the caller looks again rather than
     * taking a region grown to its end for one that cannot grow.
     */
    boolean growPast(int seen) {
        if (allocated > seen) return true;
        if (seen >= capacity) return false;
        bufferOf(seen);
        return allocated > seen;
    }

    /**
     * Begins allocating, in the background, the first chunk past those allocated that is not begun yet, keeping at most
     * two under way: called when head-room nears the end of the allocated chunks, so {@link #grow} seldom has to wait.
     */
    void growAhead() {
        int c = allocated / framesPerChunk;
        for (int last = Math.min(chunks.length(), c + 2); c < last && allocated < capacity; c++) {
            if (chunks.get(c) == null) {
                begin(c, true);
                return;
            }
        }
    }

    /** Frames in a chunk: how far ahead of need {@link #growAhead} is called. */
    int framesPerChunk() {
        return framesPerChunk;
    }

    /**
     * Waits for a chunk allocation still under way, so the thread allocating it has ended when the store's close
     * returns (its memory goes back with the region's at the next collection), and counts what it allocated in
     * {@link #allocated} (the allocating thread does so only after its waiters may have woken).
     */
    void awaitAllocations() {
        for (int c = 0; c < chunks.length(); c++) {
            Allocation chunk = chunks.get(c);
            if (chunk != null) chunk.pieces.exceptionally(e -> null).join();
        }
        advance();
    }

    /**
     * Chunk {@code c}'s allocation, begun now if it was not yet: on a thread of its own when {@code background},
     * otherwise on this one before this returns.
     */
    private Allocation begin(int c, boolean background) {
        Allocation chunk = chunks.get(c);
        if (chunk != null) return chunk;
        Allocation mine = new Allocation(c, allocator);
        if (!chunks.compareAndSet(c, null, mine)) return chunks.get(c);
        if (background) {
            Thread t = new Thread(() -> mine.allocate(true), "varve-" + (dataRegion ? "region" : setting) + "-chunk-" + c);
            t.setDaemon(true);
            t.start();
        } else {
            mine.allocate(false);
        }
        return mine;
    }

    /**
     * One chunk's memory from {@code from}, a piece at a time (see the class comment), by whichever threads take part:
     * each takes the next piece not begun until none is left, and the one that finishes the last completes
     * {@link #pieces}. A piece refused fails the whole chunk, and those allocated go back with the next collection.
     */
    private final class Allocation {
        /** The chunk's pieces once every one is allocated; failed with the first refusal. */
        final CompletableFuture<ByteBuffer[]> pieces = new CompletableFuture<>();
        private final IntFunction<ByteBuffer> from;
        /** Frames in this chunk: the region's last chunk may hold fewer. */
        private final int chunkFrames;
        private final ByteBuffer[] allocatedPieces;
        /** The next piece to begin. */
        private final AtomicInteger next = new AtomicInteger();
        /** Pieces not allocated yet: the thread that takes this to 0 has seen every other piece's store (each before its decrement). */
        private final AtomicInteger left;

        Allocation(int chunk, IntFunction<ByteBuffer> from) {
            this.from = from;
            this.chunkFrames = Math.min(framesPerChunk, frames - chunk * framesPerChunk);
            this.allocatedPieces = new ByteBuffer[(chunkFrames + framesPerPiece - 1) / framesPerPiece];
            this.left = new AtomicInteger(allocatedPieces.length);
        }

        /**
         * Allocates pieces until none is left to begin. The chunk's own thread ({@code background}) yields its core
         * after each: the OS tends to start it on the core of the writer that asked for it.
         */
        void allocate(boolean background) {
            for (int p; (p = next.getAndIncrement()) < allocatedPieces.length && !pieces.isDone(); ) {
                try {
                    allocatedPieces[p] = from.apply(Math.min(framesPerPiece, chunkFrames - p * framesPerPiece) * pageSize);
                } catch (RuntimeException | Error e) { // OutOfMemoryError, as a rule: whatever it is, no waiter waits forever
                    pieces.completeExceptionally(e);
                    return;
                }
                if (left.decrementAndGet() == 0) {
                    pieces.complete(allocatedPieces);
                    advance();
                }
                if (background) Thread.yield();
            }
        }
    }

    /** Moves {@link #allocated} past the chunks allocated since, in order (a later chunk may be done first). */
    private synchronized void advance() {
        while (allocated < frames) {
            Allocation next = chunks.get(allocated / framesPerChunk);
            if (next == null || !next.pieces.isDone() || next.pieces.isCompletedExceptionally()) return;
            allocated = Math.min(frames, allocated + framesPerChunk);
        }
    }

    private synchronized void stop(int c, Throwable why) {
        int slots = c * framesPerChunk;
        if (slots >= capacity) return;
        capacity = slots;
        LOG.warn("{} stops growing at {} of its {} pages ({} bytes of {} {}): the JVM could not allocate more direct memory "
                + "({}); lower {}, or raise the JVM's -Xmx / -XX:MaxDirectMemorySize", dataRegion ? "the data region" : "the memory of " + setting,
                slots, frames, (long) slots * pageSize, setting, (long) frames * pageSize, why.getMessage(), setting);
    }
}
