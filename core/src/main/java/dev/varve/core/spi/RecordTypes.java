package dev.varve.core.spi;

/**
 * WAL record types. The WAL treats a type as an opaque byte; this is the one list of what each means, so that
 * the engine (logical records), the checkpointer (physical records) and recovery agree.
 */
public final class RecordTypes {
    /** An atomic batch of puts and removes across tables and partitions (logical). */
    public static final int DATA_BATCH = 1;
    /** A table created: name, id, partition count (logical). */
    public static final int CREATE_TABLE = 2;
    /** A partition emptied by {@code destroy()} (logical). */
    public static final int DESTROY_PARTITION = 3;
    /** A snapshot declaration, Retro's snaprec (logical). */
    public static final int SNAPSHOT = 4;
    /** A snapshot's rank raised after its declaration (lazy ranking; logical). */
    public static final int RANK = 5;
    /**
     * Full image of a page at its first change after a checkpoint mark (physical, WAL_PHYSICAL mode); written for
     * pages whose layout has no unused middle, else {@link #PAGE_IMAGE_SKIP_GARBAGE}.
     */
    public static final int PAGE_IMAGE = 10;
    /** Byte ranges of a page changed by one write (physical, WAL_PHYSICAL mode). */
    public static final int PAGE_DELTA = 11;
    /**
     * A checkpoint began writing pages (its id; neither logical nor physical): appended and forced after the start
     * marker and before the first page write, so a page file never holds a checkpoint's pages without the WAL
     * saying so — the witness that tells a lost start marker from a crash before it was written.
     */
    public static final int CHECKPOINT_STARTED = 12;
    /**
     * A page image like {@link #PAGE_IMAGE} without the page's unused middle (zero by the page layout's rule; restored
     * as zeros), also written instead of a {@link #PAGE_DELTA} that would be larger (physical, WAL_PHYSICAL mode).
     */
    public static final int PAGE_IMAGE_SKIP_GARBAGE = 13;
    /**
     * A page's new contents as copies from its own or another changed page's state before the change, zero runs and
     * literal bytes: what a split or a compaction writes (physical, WAL_PHYSICAL mode).
     */
    public static final int PAGE_REBUILD = 14;
    /**
     * A {@link #PAGE_IMAGE_SKIP_GARBAGE} body compressed with Snappy, written when {@code recoveryCompression} is
     * {@code SNAPPY} and compression makes the image smaller (physical, WAL_PHYSICAL mode).
     */
    public static final int PAGE_IMAGE_SNAPPY = 15;

    private RecordTypes() {
    }

    /**
     * True for the types this build writes and reads. A WAL holding another was written by a newer release: skipping
     * its records would restore and replay the pages without them, and a checkpoint would then make that lasting.
     */
    public static boolean isKnown(int type) {
        return type >= DATA_BATCH && type <= RANK || type >= PAGE_IMAGE && type <= PAGE_IMAGE_SNAPPY;
    }

    /** True for records that logical replay applies. */
    public static boolean isLogical(int type) {
        return type < PAGE_IMAGE;
    }

    /** The payload of a {@link #CHECKPOINT_STARTED} record. */
    public static java.nio.ByteBuffer checkpointStarted(long checkpointId) {
        return java.nio.ByteBuffer.allocate(Long.BYTES).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(0, checkpointId);
    }
}
