package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * A {@link FileIO} that forwards every call to another: a test wrapper (returned by a
 * {@link ForwardingFileIOFactory}'s {@code open}) extends it and overrides only the calls it watches or holds. All
 * but {@link FileIO#readMapped}, left at its default (not mapped): every read a wrapper sees goes through {@link #read}.
 */
public abstract class ForwardingFileIO implements FileIO {
    /** The file every call goes to. */
    protected final FileIO delegate;

    /** For a wrapper of {@code delegate}. */
    protected ForwardingFileIO(FileIO delegate) {
        this.delegate = delegate;
    }

    @Override
    public Path path() {
        return delegate.path();
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        return delegate.read(dst, position);
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
        delegate.write(src, position);
    }

    @Override
    public void force() throws IOException {
        delegate.force();
    }

    @Override
    public long size() throws IOException {
        return delegate.size();
    }

    @Override
    public void truncate(long size) throws IOException {
        delegate.truncate(size);
    }

    @Override
    public MappedRegion map(long position, int length) throws IOException {
        return delegate.map(position, length);
    }

    @Override
    public void close() throws IOException {
        delegate.close();
    }

    /** What a wrapper does in place of a mapping's force: {@code region} is the real mapping. */
    @FunctionalInterface
    protected interface RegionForce {
        void force(MappedRegion region, int offset, int length) throws IOException;
    }

    /** {@code region} with its forces handed to {@code force}; its buffer is the real mapping's. */
    protected static MappedRegion withForce(MappedRegion region, RegionForce force) {
        return new MappedRegion() {
            @Override
            public ByteBuffer buffer() {
                return region.buffer();
            }

            @Override
            public void force(int offset, int length) throws IOException {
                force.force(region, offset, length);
            }
        };
    }
}
