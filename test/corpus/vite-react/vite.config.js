import { defineConfig } from 'vite';

// Classic JSX (React.createElement): no React plugin needed to build.
export default defineConfig({ esbuild: { jsx: 'transform' } });
