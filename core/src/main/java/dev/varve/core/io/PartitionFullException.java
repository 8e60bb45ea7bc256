package dev.varve.core.io;

/**
 * A write was refused because a partition file would pass the most pages one may hold (2^31 - 1, 8 TiB at 4 KiB
 * pages): page indexes are 31-bit. Not damage and not an I/O failure: the store goes on serving reads, and writes that
 * fit — removes, and puts to other partitions. The message names the partition, its table and the limit. A refused
 * write changes nothing.
 */
public class PartitionFullException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * A refusal with the message naming the partition and the limit; also how Infinispan rebuilds an exception that
     * crossed from another node (class name and message).
     */
    public PartitionFullException(String message) {
        super(message);
    }

    /** {@link #PartitionFullException(String)} with a cause. */
    public PartitionFullException(String message, Throwable cause) {
        super(message, cause);
    }
}
