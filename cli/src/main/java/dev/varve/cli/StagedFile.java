package dev.varve.cli;

import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A new file written under a temporary name beside its target ({@code .NAME.<random>.partial}) and given the target's
 * name only by {@link #commit}, once it is whole and forced to disk: a run cut short (an error, kill -9, a power cut)
 * leaves nothing under the target's name, so a file there is always complete. The rename is atomic because the
 * temporary file is in the target's directory (one file system). Each run's temporary name is its own, so the file a
 * killed run left behind neither stops nor mixes with a rerun; {@link #close} without a commit deletes it.
 */
final class StagedFile implements AutoCloseable {
    static final String SUFFIX = ".partial";
    private final Path target;
    private final Path temp;
    private final FileChannel channel;
    private boolean committed;

    private StagedFile(Path target, Path temp, FileChannel channel) {
        this.target = target;
        this.temp = temp;
        this.channel = channel;
    }

    /** Creates the temporary file for {@code target} (which is not touched until {@link #commit}). */
    static StagedFile create(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        Path temp = abs.resolveSibling("." + abs.getFileName() + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + SUFFIX);
        // CREATE_NEW: never write into a file another run owns
        return new StagedFile(abs, temp, FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
    }

    /** The temporary file being written. */
    Path temp() {
        return temp;
    }

    /** The stream to write the content to (unbuffered: wrap it). Closing it closes the file, not the staging. */
    OutputStream stream() {
        return Channels.newOutputStream(channel);
    }

    /**
     * Makes the content durable, then gives it the target's name and makes the name durable too (fsync of the
     * directory): without the first force a power cut after the rename could leave the name on a file with holes.
     * The name is given with a hard link, which fails when the name exists: a rename replaces an existing file, so of
     * two runs writing the same target both succeeded and the first one's file was silently replaced by the second's
     * (the check at the start of a run does not see a file that appears while it writes). The temporary name is then
     * unlinked; a crash between the two leaves the target whole and the temporary file beside it, as a kill does.
     *
     * @throws FileAlreadyExistsException if the target exists by now; the temporary file is left for {@link #close}
     */
    void commit() throws IOException {
        channel.force(true);
        channel.close();
        try {
            Files.createLink(target, temp);
        } catch (UnsupportedOperationException | FileSystemException e) {
            // an existing target, a denied or missing directory: failures. A plain FileSystemException is what Linux's
            // EPERM for a file system without hard links (FAT, some network shares) comes as
            if (e instanceof FileSystemException f && f.getClass() != FileSystemException.class) throw f;
            // there no atomic create-if-absent of a whole file exists: the name is checked, then taken by a rename,
            // which a concurrent run may pass between the two
            if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) throw new FileAlreadyExistsException(target.toString());
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
        }
        committed = true;
        Files.deleteIfExists(temp);
        FileIOFactory.syncDirectory(target.getParent());
    }

    /** Deletes the temporary file unless committed. */
    @Override
    public void close() throws IOException {
        try {
            channel.close();
        } finally {
            if (!committed) Files.deleteIfExists(temp);
        }
    }
}
