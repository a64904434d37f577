package org.hvd;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.util.Properties;

/**
 * Loads libhvd_jni once, from the first of: {@code -Dhvd.jni.library=/abs/path/libhvd_jni.so};
 * the folder an installed hvd.jar names relative to itself (resource {@code native.properties},
 * written by the build: {@code share/java/hvd.jar} to {@code lib/<triplet>/}); the jar's own
 * folder (the build tree); {@code java.library.path}. libhvd_jni finds libhvd through its RPATH
 * or the system's library path, so no option is needed after {@code cmake --install} or with the
 * .deb files.
 */
final class NativeLoader {
  static final String PROPERTY = "hvd.jni.library";
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty(PROPERTY);
    if (path == null || path.isEmpty()) {
      Path fromJar = besideJar();
      path = fromJar == null ? null : fromJar.toString();
    }
    if (path != null) {
      System.load(path);
    } else {
      System.loadLibrary("hvd_jni");
    }
    loaded = true;
  }

  /** libhvd_jni relative to the jar this class came from, or null. */
  private static Path besideJar() {
    try {
      CodeSource source = NativeLoader.class.getProtectionDomain().getCodeSource();
      if (source == null) return null;
      Path jarDir = Paths.get(source.getLocation().toURI()).getParent();
      if (jarDir == null) return null;
      Properties props = new Properties();
      try (InputStream in = NativeLoader.class.getResourceAsStream("native.properties")) {
        if (in != null) props.load(in);
      }
      String name = System.mapLibraryName("hvd_jni");
      for (String dir : new String[] {props.getProperty("jni.dir", "."), "."}) {
        Path lib = jarDir.resolve(dir).resolve(name).normalize();
        if (Files.isRegularFile(lib)) return lib;
      }
    } catch (IOException | URISyntaxException | SecurityException | IllegalArgumentException
        | FileSystemNotFoundException e) {
      // Not loaded from a jar file on disk: java.library.path decides.
    }
    return null;
  }
}
