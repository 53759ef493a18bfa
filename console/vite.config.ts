import react from "@vitejs/plugin-react"
import { defineConfig } from "vite"

// Built by `npm run build:console` (run by `prepare` on npm install) into console/dist, which every node
// serves at /console (src/web/ConsoleRoutes.ts). Nothing inline: the page's CSP allows this origin's files only.
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsInlineLimit: 0,
    target: "es2022",
    reportCompressedSize: true
  }
})
