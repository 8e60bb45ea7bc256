package dev.varve.server;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/** The real file system, whose reads of the archive's Pagelog segments fail once {@link #failing} is set, as a failing disk's would. */
final class FailingArchiveReadsIO extends ForwardingFileIOFactory {
    final AtomicBoolean failing = new AtomicBoolean();

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        FileIO f = super.open(file, create);
        if (!file.getFileName().toString().startsWith("pagelog-")) return f;
        return new ForwardingFileIO(f) {
            @Override
            public int read(ByteBuffer dst, long position) throws IOException {
                if (failing.get()) throw new IOException("Input/output error");
                return super.read(dst, position);
            }
        };
    }
}
