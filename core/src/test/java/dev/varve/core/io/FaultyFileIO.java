package dev.varve.core.io;

import dev.varve.core.io.FaultyFileIOFactory.Kind;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A file opened through {@link FaultyFileIOFactory}: every call asks the factory first (a crash may be due, the
 * process may be dead, an fsync may be set to fail), then goes to the real file and tells the file's
 * {@link FaultyFile} what is not durable yet. A handle opened before a {@link FaultyFileIOFactory#powerLoss} is
 * stale and refuses everything: it belongs to the process that died.
 */
@SuppressWarnings("try") // an Access admits an operation for the length of its try block
final class FaultyFileIO implements FileIO {
    private final FaultyFileIOFactory factory;
    private final Path path;
    private final FileChannel channel;
    private final FaultyFile state;
    private final long epoch;

    FaultyFileIO(FaultyFileIOFactory factory, Path path, FileChannel channel, FaultyFile state, long epoch) {
        this.factory = factory;
        this.path = path;
        this.channel = channel;
        this.state = state;
        this.epoch = epoch;
    }

    @Override
    public Path path() {
        return path;
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.READ, path, null, epoch)) {
            int start = dst.position();
            FaultyFile.readFully(channel, dst, position);
            return dst.position() - start;
        }
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.WRITE, path, null, epoch)) {
            if (a.crash()) {
                long end = position + src.remaining();
                if (a.durableTear()) {
                    int landed = state.writeTornByPowerCut(channel, src, position);
                    throw a.crashException("power cut: " + landed + " of " + (end - position) + " bytes at offset " + position + " landed");
                }
                int keep = (int) (FaultyFile.tornCut(position, end, a.random()) - position);
                state.write(channel, src, position, keep);
                throw a.crashException("torn write of " + keep + " of " + (end - position) + " bytes at offset " + position);
            }
            state.write(channel, src, position, -1);
        }
    }

    @Override
    public void force() throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.FORCE, path, null, epoch)) {
            if (a.crash()) throw a.crashException("fsync not done");
            a.maybeFailForce();
            state.force(); // simulated: no real fsync, as no test outlives the machine's page cache (see the factory)
        }
    }

    @Override
    public long size() throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.READ, path, null, epoch)) {
            return channel.size();
        }
    }

    @Override
    public void truncate(long size) throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.TRUNCATE, path, null, epoch)) {
            if (a.crash()) throw a.crashException("truncate not done");
            state.truncate(channel, size);
        }
    }

    @Override
    public MappedRegion map(long position, int length) throws IOException {
        try (FaultyFileIOFactory.Access a = factory.begin(Kind.MAP, path, null, epoch)) {
            if (a.crash()) throw a.crashException("not mapped");
            if (channel.size() < position + length) {
                // growing the file is a change like a write: log it so a power loss can take it back
                ByteBuffer zeros = ByteBuffer.allocate((int) (position + length - channel.size()));
                state.write(channel, zeros, channel.size(), -1);
            }
            MappedByteBuffer mb = channel.map(FileChannel.MapMode.READ_WRITE, position, length);
            FaultyFile.MappedShadow shadow = state.map(position, length, mb);
            return new Region(mb, shadow);
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public String toString() {
        return "FaultyFileIO[" + path + "]";
    }

    /** A real mapping whose forces update the shadow, and go through the factory like every other call. */
    private final class Region implements MappedRegion {
        private final MappedByteBuffer buffer;
        private final FaultyFile.MappedShadow shadow;

        Region(MappedByteBuffer buffer, FaultyFile.MappedShadow shadow) {
            this.buffer = buffer;
            this.shadow = shadow;
        }

        @Override
        public ByteBuffer buffer() {
            return buffer;
        }

        @Override
        public void force(int offset, int length) throws IOException {
            try (FaultyFileIOFactory.Access a = factory.begin(Kind.MAP_FORCE, path, null, epoch)) {
                if (a.crash()) throw a.crashException("msync not done");
                a.maybeFailForce();
                shadow.force(offset, length); // simulated, like a file's fsync
            }
        }
    }
}
