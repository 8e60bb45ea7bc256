package dev.varve.core.io;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The OS's reason for a refused file operation is in the message once, whether or not the caller put it there. */
class StorageExceptionReasonTest {
    private final Path dir = Path.of("/store/checkpoints");

    @Test
    void theReasonIsAddedWhenTheMessageLacksIt() {
        FileSystemException emfile = new FileSystemException(dir.toString(), null, "Too many open files");
        assertEquals("cannot list checkpoint directory: Too many open files [file " + dir + "]",
                new StorageException("cannot list checkpoint directory", dir, emfile).getMessage());
        assertEquals("cannot list checkpoint directory: AccessDeniedException [file " + dir + "]",
                new StorageException("cannot list checkpoint directory", dir, new AccessDeniedException(dir.toString())).getMessage());
    }

    @Test
    void aMessageThatCarriesTheReasonAlreadyIsLeftAsItIs() {
        FileSystemException erofs = new FileSystemException(dir.toString(), null, "Read-only file system");
        assertEquals("cannot write: " + erofs.getMessage() + " [file " + dir + "]",
                new StorageException("cannot write: " + erofs.getMessage(), dir, erofs).getMessage());
        assertEquals("disk full [file " + dir + "]", new StorageException("disk full", dir, new java.io.IOException("No space left on device")).getMessage(),
                "only the file system's refusals are added: other causes keep the caller's message");
    }
}
