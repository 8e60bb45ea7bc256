package dev.varve.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A child JVM running a main class of the test class path, whose output lines the test can wait for, and kill -9. */
public final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final StringBuffer output = new StringBuffer();
    private final Thread pump;

    private ChildJvm(Process process) {
        this.process = process;
        pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    output.append(line).append('\n');
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the process went away
            }
        }, "child-output");
        pump.setDaemon(true);
        pump.start();
    }

    public static ChildJvm start(Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:MaxDirectMemorySize=512m"); // the engine's data region (256 MiB by default) is direct memory
        cmd.add("-XX:+UseSerialGC");
        // a child lives seconds: C2's compiles of its hot loops took more CPU than they saved (a sender writing 9,000
        // steps before READY: 6.0 s of CPU with C2, 4.7 s with C1 alone), and the CI VM has two cores for everything
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:-UsePerfData"); // no hsperfdata file to map and update: nothing attaches to a child
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        try {
            return new ChildJvm(new ProcessBuilder(cmd).redirectErrorStream(true).start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits for the first line starting with {@code prefix} and returns it. */
    public String awaitLine(String prefix, long timeoutSeconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (true) {
            long left = deadline - System.nanoTime();
            String line = lines.poll(Math.max(0, Math.min(left, TimeUnit.MILLISECONDS.toNanos(200))), TimeUnit.NANOSECONDS);
            if (line == null && left > 0 && process.isAlive()) continue;
            if (line == null && !process.isAlive()) line = lines.poll(2, TimeUnit.SECONDS); // its last lines may still be on the way
            if (line == null) throw new AssertionError("no line starting with '" + prefix + "' in " + timeoutSeconds + " s; child "
                    + (process.isAlive() ? "alive" : "exited " + process.exitValue()) + ", output:\n" + output);
            if (line.startsWith(prefix)) return line;
        }
    }

    /** SIGKILL (kill -9), and waits until the process is gone. */
    public void kill9() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) throw new AssertionError("child did not die");
    }

    /** SIGTERM: the JVM runs its shutdown hooks. Returns the exit code. */
    public int terminate() throws InterruptedException {
        // through the handle: Process.destroy also closes our end of the child's output, which lost what its hooks
        // printed (a follow's report) and left them writing into a closed pipe
        process.toHandle().destroy();
        return awaitExit(60);
    }

    /** Waits for a normal exit and for the child's last lines, and returns the exit code. */
    public int awaitExit(long timeoutSeconds) throws InterruptedException {
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("child did not exit in " + timeoutSeconds + " s; output:\n" + output);
        }
        // the pump reads on after the exit: on a loaded VM a test read the output of a child that had exited 0 before
        // the pump had its "complete" line
        pump.join(TimeUnit.SECONDS.toMillis(30));
        return process.exitValue();
    }

    public String output() {
        return output.toString();
    }

    @Override
    public void close() {
        if (!process.isAlive()) return;
        try {
            kill9();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing a child JVM", e);
        }
    }
}
