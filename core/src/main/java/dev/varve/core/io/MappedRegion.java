package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A memory-mapped window of a file. Stores into {@link #buffer()} reach the OS at once (they survive a process
 * crash); {@link #force} makes a range durable against power loss.
 */
public interface MappedRegion {
    /** The mapped bytes; position 0 is the region's start in the file. */
    ByteBuffer buffer();

    /** Makes {@code length} bytes at {@code offset} durable. */
    void force(int offset, int length) throws IOException;
}
