package dev.varve.engine;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a test fixture's {@code main} in a child JVM (own heap cap, killable) and collects its output. */
final class FixtureChildJvm {
    private FixtureChildJvm() {
    }

    /** Exit code ({@code -1} when killed on timeout) and combined stdout/stderr. */
    record Result(int exitCode, String output, long millis) {
        String describe() {
            return "child JVM exit " + exitCode + " after " + millis + " ms; output:\n" + output;
        }
    }

    /**
     * The class path a child JVM runs with: this JVM's and, when surefire runs the tests on the module path, the
     * module path's entries and what is patched into modules (this module's test classes, core's test fixtures), which
     * is on neither path. The child runs the same code, all of it on its class path.
     */
    static String classPath() {
        List<String> parts = new ArrayList<>();
        for (Class<?> patched : new Class<?>[]{FixtureChildJvm.class, dev.varve.core.io.ForwardingFileIOFactory.class}) {
            try {
                parts.add(Path.of(patched.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (java.net.URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        for (String path : new String[]{System.getProperty("jdk.module.path"), System.getProperty("java.class.path")}) {
            if (path != null && !path.isEmpty()) parts.add(path);
        }
        return String.join(java.io.File.pathSeparator, parts);
    }

    /**
     * The start of every child JVM's command line: {@code java}, {@code heap}, and C1 only — a child lives seconds (a
     * fixture, or a workload killed soon after it started), too short for C2's compilations to pay back, and no test
     * checks how fast a child runs, only what it leaves on disk and prints.
     */
    static List<String> java(String heap) {
        return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), heap, "-XX:TieredStopAtLevel=1"));
    }

    static Result run(String heap, long timeoutSeconds, Class<?> main, String... args) {
        return run(List.of(), heap, timeoutSeconds, main, args);
    }

    /** {@link #run(String, long, Class, String...)} under {@code launcher}, a command that runs the child JVM's (setpriv). */
    static Result run(List<String> launcher, String heap, long timeoutSeconds, Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>(launcher);
        cmd.addAll(java(heap));
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-cp");
        cmd.add(classPath());
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        long t0 = System.nanoTime();
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            Thread pump = new Thread(() -> {
                try (InputStream in = p.getInputStream()) {
                    in.transferTo(out);
                } catch (IOException ignored) {
                    // the process went away
                }
            });
            pump.start();
            boolean done = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
            if (!done) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
            pump.join(5_000);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            String text;
            synchronized (out) {
                text = out.toString(StandardCharsets.UTF_8);
            }
            return new Result(done ? p.exitValue() : -1, text, ms);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** For a child: after {@code seconds}, prints every thread's stack and halts the JVM with exit code 3. */
    static void watchdog(long seconds, String what) {
        Thread w = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("WATCHDOG: " + what + " did not finish in " + seconds + " s");
            Thread.getAllStackTraces().forEach((t, st) -> {
                if (!t.getName().startsWith("main") && !t.getName().startsWith("destroyer")) return;
                System.out.println("thread " + t.getName() + ":");
                for (StackTraceElement e : st) System.out.println("    at " + e);
            });
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        w.setDaemon(true);
        w.start();
    }

    /**
     * Kill -9 under load: starts {@code main(dir, mode, from, ack)} in a child JVM, waits until it has acknowledged
     * work past {@code from} in the ack file, lets it run {@code runMillis} more and kills it (destroyForcibly).
     * Returns what it acknowledged ({@link KillWorkload#acknowledged}); a child that died by itself fails the test.
     */
    static long killUnderLoad(Class<?> main, Path dir, dev.varve.config.RecoveryMode mode, long from, Path ack, Path log, long runMillis,
                              String where, String... more) throws IOException, InterruptedException {
        long[] killAt = {0};
        return killWhen(main, dir, mode, from, ack, log, () -> {
            if (killAt[0] == 0) killAt[0] = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(runMillis);
            return System.nanoTime() >= killAt[0];
        }, where, more);
    }

    /**
     * Like {@link #killUnderLoad}, but once the child acknowledged work past {@code from}, kills it as soon as
     * {@code when} (polled every millisecond, for at most 60 s) says so: at a moment seen on disk.
     */
    static long killWhen(Class<?> main, Path dir, dev.varve.config.RecoveryMode mode, long from, Path ack, Path log,
                         java.util.function.BooleanSupplier when, String where, String... more) throws IOException, InterruptedException {
        java.nio.file.Files.deleteIfExists(ack);
        List<String> command = java("-Xmx256m");
        command.addAll(List.of("-cp", classPath(), main.getName(), dir.toString(), mode.name(), String.valueOf(from), ack.toString()));
        command.addAll(List.of(more)); // the main's own further arguments
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (KillWorkload.acknowledged(ack) <= from && child.isAlive() && System.nanoTime() < deadline) Thread.sleep(10);
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!when.getAsBoolean() && child.isAlive() && System.nanoTime() < deadline) Thread.sleep(1);
        if (!child.isAlive()) org.junit.jupiter.api.Assertions.fail(where + ": child died by itself:\n" + java.nio.file.Files.readString(log));
        child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        return KillWorkload.acknowledged(ack);
    }
}
