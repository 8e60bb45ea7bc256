package dev.varve.core.io;

import java.io.Closeable;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

/**
 * A second descriptor of a file, opened before the file's first fsync through its channel and used for nothing but
 * an fsync when that channel was closed under one. Two facts make it necessary. The JDK reports a channel closed
 * during a call (by another thread's interrupt, or this one's) in place of the call's own outcome, so an fsync that
 * failed looks merely interrupted. And Linux reports a write-back error once to each open file: an fsync through
 * the reopened channel, which never saw the error, returns success while the pages are lost — PostgreSQL's
 * "fsyncgate". The witness saw every error since it was opened and reports it; {@link RandomAccessFile}'s
 * {@code FileDescriptor.sync()} is not an interruptible channel call, so no interrupt closes it.
 */
interface FsyncWitness extends Closeable {
    /** fsync through this descriptor: throws when a write-back error since it was opened was not reported to it. */
    void sync() throws IOException;

    /** Opens a witness of a file. */
    interface Opener {
        FsyncWitness open(Path file) throws IOException;
    }

    /** The real one: the file opened read-only (Linux fsyncs through any descriptor). */
    static FsyncWitness open(Path file) throws IOException {
        RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r");
        return new FsyncWitness() {
            @Override
            public void sync() throws IOException {
                raf.getFD().sync();
            }

            @Override
            public void close() throws IOException {
                raf.close();
            }
        };
    }
}
